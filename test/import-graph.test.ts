// The import graph of src/: imports run down the floors below, never up, never in a circle, and deliver-env
// reaches the webhook's code only through the injection's entry. A rule broken here is a module in the wrong
// folder or an idea with two homes; move the code, do not add an exception.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../src/', import.meta.url));

/**
 * Each folder of src/ and its floor: a module imports only from its own folder or a lower floor. The command
 * line is the edge (every folder under cli/ is one room); nothing imports it.
 */
const FLOORS: Readonly<Record<string, number>> = {
  cli: 9,
  server: 8,
  'server/tls': 8,
  'deliver/pools': 8,
  'deliver/controller': 7,
  admission: 7,
  certs: 7,
  'deliver/envd': 6,
  config: 6,
  injection: 6,
  'deliver/leadership': 5,
  sandbox: 5,
  envfile: 5,
  options: 5,
  'file-watch': 5,
  wrapper: 4,
  'kube-client': 4,
  'kube-shapes': 4,
  logging: 4,
  errors: 3,
  json: 3,
  time: 3,
};

/** What deliver-env may take of the webhook's half: the injection's entry, for which containers a runtime adds. */
const DELIVER_MAY_IMPORT = new Set(['injection/index.ts']);

interface Import {
  from: string;
  to: string;
}

function sourceFiles(): string[] {
  return readdirSync(SRC, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts'))
    .map((name) => name.split(path.sep).join('/'));
}

/** Every relative import and re-export of `file`, static or dynamic, as paths below src/. */
function importsOf(file: string, text: string): Import[] {
  const found = text.matchAll(/(?:^|\s)(?:import|export)\b[^;'"]*?(?:from\s*)?\(?\s*'(\.{1,2}\/[^']+)'/gm);
  return [...found].map((match) => {
    const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), match[1] ?? ''));
    return { from: file, to: target.replace(/\.js$/, '.ts') };
  });
}

/** The folder a module is in; every folder under cli/ is the edge, one room. */
function roomOf(file: string): string {
  const folder = path.posix.dirname(file);
  return folder === 'cli' || folder.startsWith('cli/') ? 'cli' : folder;
}

/** Each circle of imports (a strongly connected set of two or more files, or a file importing itself). */
function circles(imports: readonly Import[]): string[][] {
  const next = new Map<string, string[]>();
  for (const { from, to } of imports) next.set(from, [...(next.get(from) ?? []), to]);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node) ?? 0);
    stack.push(node);
    onStack.add(node);
    for (const to of next.get(node) ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node) ?? 0, low.get(to) ?? 0));
      } else if (onStack.has(to)) {
        low.set(node, Math.min(low.get(node) ?? 0, index.get(to) ?? 0));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const members: string[] = [];
    for (let member = stack.pop(); member !== undefined; member = stack.pop()) {
      onStack.delete(member);
      members.push(member);
      if (member === node) break;
    }
    if (members.length > 1 || (next.get(node) ?? []).includes(node)) found.push(members.sort());
  };
  for (const node of [...next.keys()].sort()) if (!index.has(node)) visit(node);
  return found;
}

/** The imports that break a rule, each as `from -> to: why`. */
function brokenRules(imports: readonly Import[]): string[] {
  const broken: string[] = [];
  for (const { from, to } of imports) {
    const [fromRoom, toRoom] = [roomOf(from), roomOf(to)];
    if (fromRoom === toRoom) continue;
    const [fromFloor, toFloor] = [FLOORS[fromRoom], FLOORS[toRoom]];
    if (fromFloor === undefined || toFloor === undefined) {
      broken.push(`${from} -> ${to}: ${fromFloor === undefined ? fromRoom : toRoom}/ has no floor in FLOORS`);
    } else if (toFloor >= fromFloor) {
      broken.push(`${from} -> ${to}: ${toRoom}/ is not below ${fromRoom}/`);
    }
    const intoWebhook = toRoom === 'admission' || toRoom === 'injection';
    if (fromRoom.startsWith('deliver/') && intoWebhook && !DELIVER_MAY_IMPORT.has(to)) {
      broken.push(`${from} -> ${to}: deliver-env takes nothing of the webhook's half but the injection's entry`);
    }
  }
  return broken;
}

describe('the import graph of src/', () => {
  const files = sourceFiles();
  const imports = files.flatMap((file) => importsOf(file, readFileSync(path.join(SRC, file), 'utf8')));

  it('is read whole: every import names a module of src/', () => {
    expect(imports.length).toBeGreaterThan(400);
    expect(imports.filter(({ to }) => !files.includes(to))).toEqual([]);
  });

  it('runs down the floors: no import from a lower folder to a higher one, or between folders of one floor', () => {
    expect(brokenRules(imports)).toEqual([]);
  });

  it('has no circle of imports', () => {
    expect(circles(imports)).toEqual([]);
  });

  it('holds every folder of src/ on a floor, and names none that is gone', () => {
    const rooms = new Set(files.map(roomOf));
    expect([...rooms].filter((room) => FLOORS[room] === undefined)).toEqual([]);
    expect(Object.keys(FLOORS).filter((room) => !rooms.has(room))).toEqual([]);
  });
});

describe('the rules', () => {
  it('find an import up, across one floor, into the webhook from deliver-env, and a circle', () => {
    expect(
      brokenRules([
        { from: 'time/clock.ts', to: 'cli/main.ts' },
        { from: 'admission/review.ts', to: 'certs/pki.ts' },
        { from: 'deliver/pools/pool-pods.ts', to: 'injection/status.ts' },
        { from: 'deliver/controller/claim.ts', to: 'injection/index.ts' },
      ]),
    ).toEqual([
      'time/clock.ts -> cli/main.ts: cli/ is not below time/',
      'admission/review.ts -> certs/pki.ts: certs/ is not below admission/',
      "deliver/pools/pool-pods.ts -> injection/status.ts: deliver-env takes nothing of the webhook's half but the injection's entry",
    ]);
    expect(
      circles([
        { from: 'a.ts', to: 'b.ts' },
        { from: 'b.ts', to: 'c.ts' },
        { from: 'c.ts', to: 'a.ts' },
        { from: 'c.ts', to: 'd.ts' },
      ]),
    ).toEqual([['a.ts', 'b.ts', 'c.ts']]);
  });

  it('read static, type-only, re-exported and dynamic imports', () => {
    const text = [
      "import { a } from './a.js';",
      "import type { B } from '../b.js';",
      "export { c } from './c.js';",
      "const d = await import('./d.js');",
      'import {',
      '  e,',
      "} from './e.js';",
      "import { f } from 'node:fs';",
    ].join('\n');
    expect(importsOf('x/y.ts', text).map(({ to }) => to)).toEqual(['x/a.ts', 'b.ts', 'x/c.ts', 'x/d.ts', 'x/e.ts']);
  });
});
