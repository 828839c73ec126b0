/**
 * The curl examples of README.md and docs/server.md, and the server log docs/server.md shows for them, are what
 * the real server says. The built server is started as `npm start` starts it (self-signed certificate under
 * certs/, the packaged injection config); each documented `curl ... | ...` line is done here as a request and
 * its pipeline, and its output compared with the documented text, line for line.
 *
 * The pipeline stages understood are the few the docs use (jq field and element printing, base64 -d, head -N);
 * a command or stage outside them fails the test, so a new example cannot go unchecked.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnServer, type ChildServer } from '../server/support/child-server.js';
import { httpsRequest } from '../server/support/https-client.js';
import { temporaryDirectory } from '../server/support/pki.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const DOCUMENTED_URL = 'https://localhost:8443/mutate';

interface Example {
  file: string;
  command: string;
  output: string[];
}

/** Every `$ curl` command of the ```console blocks of `file`, its continuation lines joined, with its output. */
async function curlExamples(file: string): Promise<Example[]> {
  const text = await readFile(join(ROOT, file), 'utf8');
  const examples: Example[] = [];
  for (const [, block = ''] of text.matchAll(/^```console\n([\s\S]*?)^```$/gm)) {
    let current: Example | undefined;
    let continued = false;
    for (const line of block.replace(/\n$/, '').split('\n')) {
      if (continued && current !== undefined) {
        current.command += ` ${line.trim().replace(/\\$/, '').trim()}`;
      } else if (line.startsWith('$ ')) {
        current = { file, command: line.slice(2).replace(/\\$/, '').trim(), output: [] };
        if (current.command.startsWith('curl ')) examples.push(current);
      } else {
        current?.output.push(line);
      }
      continued = line.endsWith('\\');
    }
  }
  return examples;
}

/** Shell words, with single and double quotes as the examples use them (no escapes inside quotes). */
function words(command: string): string[] {
  return [...command.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map((match) => match[1] ?? match[2] ?? match[3] ?? '');
}

/** Splits at `|` outside quotes. */
function stages(command: string): string[] {
  return [...command.matchAll(/(?:'[^']*'|"[^"]*"|[^|'"])+/g)].map((match) => match[0].trim());
}

let dir: string;
let removeDir: () => Promise<void>;
let server: ChildServer;
const results: { example: Example; output: string[] }[] = [];
let log: Record<string, unknown>[];

/** What curl sends and prints for one documented command line. */
async function curl(command: string): Promise<string> {
  const args = words(command).slice(1);
  let ca: Buffer | undefined;
  let body: string | undefined;
  const headers: Record<string, string> = {};
  let url: string | undefined;
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i] ?? '';
    const value = (): string => args[++i] ?? '';
    if (arg === '-s') continue;
    else if (arg === '--cacert') ca = await readFile(join(dir, value()));
    else if (arg === '-H') {
      const [name = '', ...rest] = value().split(':');
      headers[name.trim().toLowerCase()] = rest.join(':').trim();
    } else if (arg === '-d' && args[i + 1]?.startsWith('@')) {
      // curl -d @FILE sends the file without its carriage returns and newlines.
      body = (await readFile(join(ROOT, value().slice(1)), 'utf8')).replace(/[\r\n]/g, '');
    } else if (arg === DOCUMENTED_URL) url = `https://127.0.0.1:${server.port}/mutate`;
    else throw new Error(`curl argument ${arg} is not one the docs test understands`);
  }
  if (ca === undefined || url === undefined) throw new Error(`${command}: no --cacert or no ${DOCUMENTED_URL}`);
  const answer = await httpsRequest(url, body === undefined ? 'GET' : 'POST', body, { ca }, headers);
  return answer.text;
}

/** One pipeline stage, on the text the last one printed. */
function stage(command: string, input: string): string {
  const [name, ...args] = words(command);
  const joined = args.join(' ');
  const lines = (text: string[]): string => text.map((line) => `${line}\n`).join('');
  if (name === 'jq' && joined === '-r .response.patch')
    return `${(JSON.parse(input) as { response: { patch: string } }).response.patch}\n`;
  if (name === 'base64' && joined === '-d') return Buffer.from(input.trim(), 'base64').toString('utf8');
  if (name === 'jq' && joined === '-c .[]')
    return lines((JSON.parse(input) as unknown[]).map((element) => JSON.stringify(element)));
  if (name === 'jq' && joined === '-r .[] | "\\(.op) \\(.path)"') {
    return lines((JSON.parse(input) as { op: string; path: string }[]).map(({ op, path }) => `${op} ${path}`));
  }
  const head = /^-(\d+)$/.exec(joined);
  if (name === 'head' && head !== null) return lines(input.replace(/\n$/, '').split('\n').slice(0, Number(head[1])));
  throw new Error(`pipeline stage "${command}" is not one the docs test understands`);
}

beforeAll(async () => {
  ({ dir, remove: removeDir } = await temporaryDirectory('docs-curl'));
  const examples = [...(await curlExamples('README.md')), ...(await curlExamples('docs/server.md'))];
  // As docs/server.md's log shows: an earlier start made certs/, this one reuses them.
  const first = await spawnServer(['--host', '127.0.0.1', '--port', '0', '--metrics-port', '0'], dir);
  first.child.kill('SIGTERM');
  await first.exited;
  server = await spawnServer(['--host', '127.0.0.1', '--port', '0', '--metrics-port', '0'], dir);
  try {
    for (const example of examples) {
      // A pipeline line in the script itself is joined with spaces: `jq -r '.[] | "\(.op) \(.path)"'` is one stage.
      const [request = '', ...rest] = stages(example.command);
      let text = await curl(request);
      for (const next of rest) text = stage(next, text);
      results.push({ example, output: text.replace(/\n$/, '').split('\n') });
    }
    await server.logged('admission');
  } finally {
    server.child.kill('SIGTERM');
    await server.exited;
  }
  log = server.logs;
}, 60_000);
afterAll(() => removeDir());

describe('the curl examples', () => {
  it('are there in both files', () => {
    expect(results.map(({ example }) => example.file)).toEqual(expect.arrayContaining(['README.md', 'docs/server.md']));
  });

  it('print what the server answers, line for line', () => {
    for (const { example, output } of results) {
      expect({ file: example.file, command: example.command, output: example.output }).toEqual({
        file: example.file,
        command: example.command,
        output,
      });
    }
  });
});

/** Fields that differ from run to run, or with the build and the runtime: compared by presence only. */
const VOLATILE = new Set(['time', 'pid', 'durationMs', 'certNotAfter', 'address', 'metricsPort', 'version', 'node']);
/** Paths of the checkout, which differ by where it is: compared from `manifests/` on. */
const CHECKOUT_PATHS = new Set(['file', 'configFile']);

/** The documented ```json blocks of docs/server.md made of log lines (objects with a `level`). */
async function documentedLogLines(): Promise<Record<string, unknown>[]> {
  const text = await readFile(join(ROOT, 'docs/server.md'), 'utf8');
  const lines: Record<string, unknown>[] = [];
  for (const [, block = ''] of text.matchAll(/^```json\n([\s\S]*?)^```$/gm)) {
    for (const line of block.trim().split('\n')) {
      const parsed = JSON.parse(line) as Record<string, unknown>;
      if ('level' in parsed) lines.push(parsed);
    }
  }
  return lines;
}

function comparable(line: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(line).map(([key, value]) => {
      if (VOLATILE.has(key)) return [key, '(varies)'];
      if (CHECKOUT_PATHS.has(key) && typeof value === 'string') return [key, value.slice(value.indexOf('manifests/'))];
      return [key, value];
    }),
  );
}

describe("docs/server.md's log lines", () => {
  it('are the lines the server wrote for that start and request, field for field', async () => {
    const documented = await documentedLogLines();
    expect(documented.length).toBeGreaterThan(0);
    for (const line of documented) {
      const real = log.find((candidate) => candidate.msg === line.msg);
      expect(real, `no "${String(line.msg)}" line in the server's log`).toBeDefined();
      expect(comparable(line)).toEqual(comparable(real ?? {}));
    }
  });
});
