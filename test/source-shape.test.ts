import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as prettier from 'prettier';
import { describe, expect, it } from 'vitest';

// `npm run lint` checks the formatting too, but lint is not part of the tests; this keeps the tree formatted on
// every CI run, so that a diff shows what changed and not how it was laid out. The bounds on a module's length
// keep files by meaning: one concept per file, however long that takes up to a bound a reader can hold, and no
// fragment split off a concept to meet a line cap.
const root = fileURLToPath(new URL('..', import.meta.url));
const ignorePath = `${root}.prettierignore`;

/** The files git tracks (a fresh clone holds exactly these), or, outside a checkout, nothing to compare. */
function trackedFiles(): string[] {
  const out = execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8' });
  return out.split('\0').filter((name) => name !== '');
}

async function unformatted(names: readonly string[]): Promise<string[]> {
  const found: string[] = [];
  for (const name of names) {
    const path = `${root}${name}`;
    const info = await prettier.getFileInfo(path, { ignorePath });
    if (info.ignored || info.inferredParser === null) continue;
    const options = await prettier.resolveConfig(path);
    const text = readFileSync(path, 'utf8');
    if (!(await prettier.check(text, { ...options, filepath: path }))) found.push(name);
  }
  return found;
}

const MAX_LINES = 400;
const MIN_LINES = 30;

/**
 * Modules under MIN_LINES lines on purpose, each with its reason. A short file belongs in the concept it serves
 * unless it stands alone; an entry whose file has grown or gone must go too.
 */
const SHORT_ON_PURPOSE: Readonly<Record<string, string>> = {
  'src/cli/deliver-env.ts': "the command's edge: options first, the controller's modules loaded only when it runs",
  'src/kube-client/in-cluster.ts':
    'whether a pod can reach the API, apart from clients.ts so serve decides its mode without loading client-node',
  'src/cli/preflight.ts':
    "the command's edge: options first, the cluster reads (client-node among them) loaded only when it runs",
  'src/cli/main.ts': 'the entry point package.json names as bin: it only starts the command',
  'src/injection/types.ts': "the injection's door to the Kubernetes shapes, and its names of runtimes and policies",
  'src/time/backoff.ts':
    'the one backoff, which the work queue, the watches and the certificate sync each pass their bounds',
  'src/errors/error-message.ts': 'how a caught value is read, for every edge that catches one',
  'src/deliver/envd/random-hex.ts':
    "the one pooled source of random names: the temporary files' nonces and the multipart boundaries",
  'src/json/json-pointer.ts': 'RFC 6901 escaping, once for the shapes and the injection',
  'src/kube-shapes/one-yaml-document.ts': 'reading one YAML manifest, for the CLI and the ConfigMap source alike',
  'src/admission/patch.ts': "the patch's wire form, which the bench times alone (bench/inprocess.ts)",
  'src/cli/pod-review.ts': "the CLI's reading of a pod manifest and of an answer's patch, for inject and explain",
  'src/cli/serve/cluster.ts': "serve's mode and its clients, which load client-node only in cluster mode",
  'src/server/health.ts': 'the probe answers, which the webhook port and the plain-HTTP metrics port both serve',
  'src/cli/version.ts': 'the package version, for --version and the listening line (two commands read it)',
  'src/envfile/errors.ts': "the env-file writer's one error, which each of its steps throws and the CLI prints as-is",
  'src/cli/wrapper-installer.ts':
    "how the injector's own image installs the wrapper (the edge; the injection only runs a command)",
};

/** The bench, the soak and what they share: held to src/'s bound on a module's length too. */
const HARNESSES = ['bench/', 'soak/', 'harness/'];

describe('the source tree', () => {
  const files = trackedFiles();
  const lines = (name: string): number => readFileSync(`${root}${name}`, 'utf8').split('\n').length - 1;
  const modules = files
    .filter((name) => name.startsWith('src/') && name.endsWith('.ts'))
    .map((name) => ({ name, lines: lines(name) }));
  const harnessModules = files
    .filter((name) => HARNESSES.some((folder) => name.startsWith(folder)) && name.endsWith('.ts'))
    .map((name) => ({ name, lines: lines(name) }));

  it('is laid out by prettier (npm run format)', async () => {
    expect(files.length).toBeGreaterThan(100);
    expect(await unformatted(files)).toEqual([]);
  }, 60_000);

  it(`keeps every module in src/, bench/, soak/ and harness/ at ${MAX_LINES} lines or fewer`, () => {
    expect(modules.length).toBeGreaterThan(100);
    expect(harnessModules.length).toBeGreaterThan(30);
    expect([...modules, ...harnessModules].filter(({ lines }) => lines > MAX_LINES)).toEqual([]);
  });

  it(`keeps no module in src/ under ${MIN_LINES} lines unless it stands alone`, () => {
    const short = modules.filter(({ lines }) => lines < MIN_LINES).map(({ name }) => name);
    expect(short.filter((name) => !Object.hasOwn(SHORT_ON_PURPOSE, name))).toEqual([]);
    // The list says why each short file is short: an entry no file needs any more is a reason that is not true.
    expect(Object.keys(SHORT_ON_PURPOSE).filter((name) => !short.includes(name))).toEqual([]);
  });
});
