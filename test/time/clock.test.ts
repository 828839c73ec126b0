/**
 * The clock's helpers, and the rule that makes it the one clock: outside src/time/clock.ts, no module of src/
 * reads the process's clocks or sets its timers itself. A part that does cannot be driven by a test clock, and
 * a wall clock read where a monotonic one was meant makes a stepped clock look like elapsed time.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { repeatOn, sleepOn } from '../../src/time/clock.js';
import { ManualClock } from '../support/manual-clock.js';

const src = fileURLToPath(new URL('../../src/', import.meta.url));

/** What reads the time or waits without a Clock. */
const CLOCK_READS: readonly RegExp[] = [
  /\bDate\.now\b/,
  /\bperformance\.now\(/,
  /\bsetTimeout\(/,
  /\bsetInterval\(/,
  /\bsetImmediate\(/,
  /\bnew Date\(\)/,
  /['"]node:timers(\/promises)?['"]/,
];

/** Modules of src/ allowed a read of their own, each with its reason. */
const ALLOWED: Readonly<Record<string, string>> = {
  'time/clock.ts': 'systemClock: the one place the process clocks and timers are read',
  'server/tls/self-signed.ts':
    'the default date of a self-signed pair for a caller that has no clock (serve passes its clock time)',
};

function modules(): string[] {
  return readdirSync(src, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts'))
    .map((name) => name.split('\\').join('/'));
}

function clockReads(text: string): string[] {
  return text
    .split('\n')
    .filter((line) => CLOCK_READS.some((pattern) => pattern.test(line)))
    .map((line) => line.trim());
}

describe('the one clock', () => {
  it('knows a clock read when it sees one', () => {
    const reads = [
      'const at = Date.now();',
      'now: Date.now,',
      'const t = performance.now();',
      'setTimeout(run, 10);',
      'const i = setInterval(run, 10);',
      'setImmediate(run);',
      'const today = new Date();',
      "import { setTimeout as sleep } from 'node:timers/promises';",
    ];
    expect(reads.map((line) => clockReads(line).length)).toEqual(reads.map(() => 1));
    expect(clockReads('clock.setTimer(run, 10);\nnew Date(clock.now());\nconst lastTimeout = 1;')).toEqual([]);
  });

  it('is the only reader of time in src/: every other module is given a Clock', () => {
    const found = modules()
      .filter((name) => ALLOWED[name] === undefined)
      .flatMap((name) => clockReads(readFileSync(`${src}${name}`, 'utf8')).map((line) => `${name}: ${line}`));
    expect(found).toEqual([]);
  });

  it('allows only what is still there', () => {
    const stale = Object.keys(ALLOWED).filter((name) => clockReads(readFileSync(`${src}${name}`, 'utf8')).length === 0);
    expect(stale).toEqual([]);
  });
});

describe('sleepOn', () => {
  it('resolves after the time on the clock passes, or at once on an abort, cancelling its timer', async () => {
    const clock = new ManualClock();
    let slept = false;
    const sleeping = sleepOn(clock, 100).then(() => (slept = true));
    clock.advance(99);
    await Promise.resolve();
    expect(slept).toBe(false);
    clock.advance(1);
    await sleeping;

    const abort = new AbortController();
    const cut = sleepOn(clock, 100, abort.signal);
    abort.abort();
    await cut;
    expect(clock.pending()).toEqual([]);
  });
});

describe('repeatOn', () => {
  it('runs every interval until cancelled, and goes on after a run that throws', () => {
    const clock = new ManualClock();
    let runs = 0;
    const cancel = repeatOn(clock, 100, () => {
      runs += 1;
      if (runs === 1) throw new Error('first run fails');
    });
    expect(() => clock.advance(100)).toThrow('first run fails');
    clock.advance(250);
    expect(runs).toBe(3);
    cancel();
    clock.advance(1000);
    expect(runs).toBe(3);
    expect(clock.pending()).toEqual([]);
  });
});
