/**
 * The tests' one bounded wait (test/support/wait-until.ts), and the rule that keeps it the one: no test file
 * outside it writes a polling loop on the clock, a loop that reads the time or pauses between its checks. Such
 * a loop is where a missing deadline hides, or a failure that says only "timed out"; waitUntil has neither.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { waitUntil } from './support/wait-until.js';

const testRoot = fileURLToPath(new URL('./', import.meta.url));
const HELPER = 'support/wait-until.ts';

/**
 * Loops on the clock that are not waits, each with its reason: work repeated until the test stops it, or an
 * observation over a fixed window. Keyed by the file and the loop's first line.
 */
const NOT_WAITS: Readonly<Record<string, string>> = {
  'e2e/deliver-env-pool-pods.e2e.test.ts: while (!this.stopped) {':
    'plays the pool controller: one reconcile every 100 ms until the test stops it',
  'e2e/self-managed-certs.e2e.test.ts: while (!stopped) {':
    'the handshake load that runs through the rotation, one round every 5 ms until the test stops it',
  'e2e/watch-recovery.e2e.test.ts: for (let i = 0; i < 10; i++) {':
    '/readyz stays 503 over 2 s while the list is refused: a check that something stays so',
  'wrapper/run-wrapper.ts: while (Date.now() < end) {':
    "samples a process's children over a fixed window: the length of the observation, not a wait",
};

/** What in a loop makes it a loop on the clock: a read of the time, or a pause. */
const ON_THE_CLOCK =
  /\bDate\.now\b|\bperformance\.now\b|\bsetTimeout\b|\bsetInterval\b|\bsetImmediate\b|\bsleep\(|\bdelay\(|\bscheduler\.wait\b/;
/** A second bounded wait beside waitUntil. */
const OTHER_WAITS = /\bvi\.wait(For|Until)\b/;

/**
 * `text` with the insides of comments, strings, template literals and regular expressions blanked (newlines
 * kept), so that a loop is found only in code, and a brace in a string does not count.
 */
function codeOnly(text: string): string {
  const out = text.split('');
  const blank = (from: number, to: number): void => {
    for (let k = from; k < to; k += 1) if (out[k] !== '\n') out[k] = ' ';
  };
  /** For each open template literal, the brace depth of code inside its current `${`. */
  const templates: number[] = [];
  let braces = 0;
  let previous = '';
  let i = 0;
  const skipTemplateText = (): void => {
    const start = i;
    while (i < text.length && text[i] !== '`' && !(text[i] === '$' && text[i + 1] === '{')) {
      i += text[i] === '\\' ? 2 : 1;
    }
    blank(start, Math.min(i, text.length));
    if (text[i] === '`') {
      templates.pop();
      i += 1;
    } else if (i < text.length) {
      braces += 1;
      templates[templates.length - 1] = braces;
      i += 2;
    }
    previous = '`';
  };
  while (i < text.length) {
    const c = text[i] ?? '';
    const next = text[i + 1];
    if (c === '/' && next === '/') {
      const end = text.indexOf('\n', i);
      blank(i, end < 0 ? text.length : end);
      i = end < 0 ? text.length : end;
    } else if (c === '/' && next === '*') {
      const end = text.indexOf('*/', i + 2);
      blank(i, end < 0 ? text.length : end + 2);
      i = end < 0 ? text.length : end + 2;
    } else if (c === "'" || c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== c && text[j] !== '\n') j += text[j] === '\\' ? 2 : 1;
      blank(i + 1, j);
      i = j + 1;
      previous = c;
    } else if (c === '`') {
      templates.push(-1);
      i += 1;
      skipTemplateText();
    } else if (c === '/' && (previous === '' || '(,=:[!&|?{};+-*%<>~^'.includes(previous))) {
      // A regular expression literal: where a value may start, a slash cannot be a division.
      let j = i + 1;
      let inClass = false;
      while (j < text.length && text[j] !== '\n' && (inClass || text[j] !== '/')) {
        if (text[j] === '[') inClass = true;
        else if (text[j] === ']') inClass = false;
        j += text[j] === '\\' ? 2 : 1;
      }
      blank(i + 1, j);
      i = j + 1;
      previous = '/';
    } else {
      if (c === '{') braces += 1;
      if (c === '}') {
        if (templates.length > 0 && templates[templates.length - 1] === braces) {
          braces -= 1;
          i += 1;
          skipTemplateText();
          continue;
        }
        braces -= 1;
      }
      if (!/\s/.test(c)) previous = /[\w$]/.test(c) ? 'a' : c;
      i += 1;
    }
  }
  return out.join('');
}

/** The index just past the bracket that closes the one at `open`. */
function closing(code: string, open: number): number {
  const pair: Record<string, string> = { '(': ')', '{': '}' };
  const shut = pair[code[open] ?? ''];
  let depth = 0;
  for (let k = open; k < code.length; k += 1) {
    if (code[k] === code[open]) depth += 1;
    else if (code[k] === shut && (depth -= 1) === 0) return k + 1;
  }
  return code.length;
}

/** Where a loop's body ends: its block, or its one statement. */
function bodyEnd(code: string, from: number): number {
  let k = from;
  while (/\s/.test(code[k] ?? '')) k += 1;
  if (code[k] === '{') return closing(code, k);
  const semicolon = code.indexOf(';', k);
  return semicolon < 0 ? code.length : semicolon + 1;
}

/** The first line of each loop in `text` that reads the clock or pauses, with its line number. */
function clockLoops(text: string): { line: number; head: string }[] {
  const code = codeOnly(text);
  const lines = text.split('\n');
  const found: { line: number; head: string }[] = [];
  for (const match of code.matchAll(/\b(?:while|for(?:\s+await)?)\s*\(|\bdo\s*\{/g)) {
    const at = match.index;
    const open = at + match[0].length - 1;
    let end: number;
    if (match[0].startsWith('do')) {
      const block = closing(code, open);
      end = closing(code, code.indexOf('(', block));
    } else {
      end = bodyEnd(code, closing(code, open));
    }
    if (ON_THE_CLOCK.test(code.slice(at, end))) {
      const line = code.slice(0, at).split('\n').length;
      found.push({ line, head: (lines[line - 1] ?? '').trim() });
    }
  }
  return found;
}

function testFiles(): string[] {
  return readdirSync(testRoot, { recursive: true, encoding: 'utf8' })
    .map((name) => name.split('\\').join('/'))
    .filter((name) => name.endsWith('.ts') && name !== HELPER);
}

describe('waitUntil', () => {
  it('asks until the probe gives a value, and resolves with it', async () => {
    let asks = 0;
    const found = await waitUntil(() => (++asks < 3 ? undefined : { asks }), { what: 'three asks', timeoutMs: 5000 });
    expect(found).toEqual({ asks: 3 });
  });

  it('by default waits past what is not truthy: undefined, null, false, 0 and the empty string', async () => {
    const values: unknown[] = [undefined, null, false, 0, '', Number.NaN, 'here'];
    expect(await waitUntil(() => values.shift(), { what: 'a value', timeoutMs: 5000, intervalMs: 1 })).toBe('here');
    expect(values).toEqual([]);
  });

  it('takes the value `until` accepts', async () => {
    let n = 0;
    expect(
      await waitUntil(() => (n += 1), { what: 'n at 4', timeoutMs: 5000, intervalMs: 1, until: (v) => v >= 4 }),
    ).toBe(4);
  });

  it('asks once even with no time to wait', async () => {
    expect(await waitUntil(() => 'here', { what: 'at once', timeoutMs: 0 })).toBe('here');
  });

  it('fails at its deadline naming what it waited for, the last value seen and the detail', async () => {
    let n = 0;
    const started = performance.now();
    const wait = waitUntil(() => ({ count: (n += 1) }), {
      what: 'a count of a million',
      timeoutMs: 60,
      intervalMs: 5,
      until: (v) => v.count >= 1_000_000,
      detail: () => 'the log says nothing',
    });
    const error = await wait.then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(performance.now() - started).toBeGreaterThanOrEqual(59);
    expect(error?.message).toMatch(/^timed out after 60 ms waiting for a count of a million \(asked \d+ times\)/);
    expect(error?.message).toContain(`last seen: { count: ${n} }`);
    expect(error?.message).toMatch(/\nthe log says nothing$/);
  });

  it('ends at once with the error giveUp gives, and with the error the probe throws', async () => {
    const gone = new Error('the process exited');
    await expect(waitUntil(() => false, { what: 'a process', timeoutMs: 60_000, giveUp: () => gone })).rejects.toBe(
      gone,
    );
    const broken = new Error('the probe broke');
    await expect(
      waitUntil(
        () => {
          throw broken;
        },
        { what: 'a broken probe', timeoutMs: 60_000 },
      ),
    ).rejects.toBe(broken);
  });
});

describe('the one bounded wait', () => {
  it('knows a polling loop on the clock when it sees one', () => {
    const loops = [
      'while (!done()) await sleep(20);',
      'const deadline = Date.now() + 1000;\nwhile (!done()) {\n  if (Date.now() > deadline) throw new Error();\n  await tick();\n}',
      'for (;;) {\n  if (await ready()) return;\n  await new Promise((r) => setTimeout(r, 5));\n}',
      'for (let i = 0; ; i++) {\n  if (i > 300) throw new Error("never");\n  await sleep(100);\n}',
      'do {\n  await new Promise((r) => setImmediate(r));\n} while (busy());',
      'while (performance.now() < end) sample();',
    ];
    expect(loops.map((text) => clockLoops(text).length)).toEqual(loops.map(() => 1));
    expect(clockLoops('let n = 0;\n\nwhile (!done()) {\n  await sleep(5);\n}')).toEqual([
      { line: 3, head: 'while (!done()) {' },
    ]);
  });

  it('passes over loops that wait for no time, and over loops written in strings and comments', () => {
    const fine = [
      'for (const line of lines) total += line.length;',
      'while (clock.pending().length > 0) clock.fire();\nawait sleep(5);',
      "const script = 'while :; do sleep 0.05; done';",
      '// while (!done()) await sleep(20);',
      'const s = `${a.map((x) => `${x}{`).join()} while (x) sleep(1)`;\nfor (;;) { if (once()) break; }',
      'const re = /[{]/;\nfor (const x of xs) { if (re.test(x)) break; }\nawait sleep(1);',
      'for await (const event of events) {\n  if (event.done) break;\n}',
    ];
    expect(fine.map((text) => clockLoops(text))).toEqual(fine.map(() => []));
  });

  it('is waitUntil: no test file outside it polls on the clock, or waits with vi.waitFor', () => {
    const found = testFiles().flatMap((name) => {
      const text = readFileSync(`${testRoot}${name}`, 'utf8');
      const loops = clockLoops(text)
        .filter(({ head }) => NOT_WAITS[`${name}: ${head}`] === undefined)
        .map(({ line, head }) => `${name}:${line}: ${head}`);
      const others = OTHER_WAITS.test(codeOnly(text)) ? [`${name}: vi.waitFor or vi.waitUntil`] : [];
      return [...loops, ...others];
    });
    expect(found).toEqual([]);
  });

  it('excuses only loops that are still there', () => {
    const present = new Set(
      testFiles().flatMap((name) =>
        clockLoops(readFileSync(`${testRoot}${name}`, 'utf8')).map(({ head }) => `${name}: ${head}`),
      ),
    );
    expect(Object.keys(NOT_WAITS).filter((key) => !present.has(key))).toEqual([]);
  });
});
