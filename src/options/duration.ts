/**
 * Durations as Go's time.ParseDuration reads them, the way Kubernetes components take duration flags: a
 * sequence of decimal numbers, each with a unit (ns, us or µs, ms, s, m, h), such as `250ms`, `10s` or `1m30s`.
 * Values are held in milliseconds, the unit Node's timers take, so a duration finer than a millisecond is
 * refused rather than rounded. A bare number other than 0 is refused: it is what a flag read in seconds or in
 * milliseconds used to take, and guessing its unit is how a 30-second timeout becomes 30 milliseconds.
 */

const NS_PER_UNIT: Readonly<Record<string, number>> = {
  ns: 1,
  us: 1e3,
  µs: 1e3,
  μs: 1e3,
  ms: 1e6,
  s: 1e9,
  m: 60e9,
  h: 3600e9,
};
const NS_PER_MS = 1e6;

const NUMBER = /^(\d+(\.\d*)?|\.\d+)$/;
// One number and the unit after it; the unit runs to the next digit or dot, so a bad one is named whole.
const PART = /(\d+(?:\.\d*)?|\.\d+)([^\d.]*)/y;

/** Milliseconds, or why the text is not a duration (the sentence goes after the flag's name). */
export function parseDuration(text: string): { ok: true; ms: number } | { ok: false; problem: string } {
  const signed = text.startsWith('-') || text.startsWith('+');
  const body = signed ? text.slice(1) : text;
  if (body === '0') return { ok: true, ms: 0 };
  if (NUMBER.test(body)) return { ok: false, problem: `"${text}" has no unit: add one, such as ${body}s or ${body}ms` };
  let ns = 0;
  let end = 0;
  PART.lastIndex = 0;
  for (let match = PART.exec(body); match !== null; match = PART.exec(body)) {
    const [, number = '', unit = ''] = match;
    if (unit === '') return { ok: false, problem: `"${text}" has a number without a unit${UNITS}` };
    const scale = Object.hasOwn(NS_PER_UNIT, unit) ? NS_PER_UNIT[unit] : undefined;
    if (scale === undefined) return { ok: false, problem: `"${text}" has an unknown unit "${unit}"${UNITS}` };
    ns += Number(number) * scale;
    end = PART.lastIndex;
  }
  if (body === '' || end !== body.length) return { ok: false, problem: `"${text}" is not a duration${UNITS}` };
  if (ns > Number.MAX_SAFE_INTEGER) return { ok: false, problem: `"${text}" is longer than any timer takes` };
  // Each part is exact in nanoseconds; only their sum in floating point can be off, by far less than one.
  const wholeNs = Math.round(ns);
  if (wholeNs % NS_PER_MS !== 0) return { ok: false, problem: `"${text}" is not a whole number of milliseconds` };
  return { ok: true, ms: (text.startsWith('-') ? -wholeNs : wholeNs) / NS_PER_MS };
}

const UNITS = ' (a number and a unit, ns, us, ms, s, m or h, such as 10s, 250ms or 1m30s)';

const FORMAT_UNITS: readonly (readonly [string, number])[] = [
  ['h', 3_600_000],
  ['m', 60_000],
  ['s', 1000],
  ['ms', 1],
];

/** Milliseconds as `parseDuration` reads them back, shortest first: 120000 is `2m`, 90500 is `1m30s500ms`. */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  let left = Math.abs(ms);
  let text = ms < 0 ? '-' : '';
  for (const [unit, size] of FORMAT_UNITS) {
    const count = Math.floor(left / size);
    if (count > 0) text += `${count}${unit}`;
    left -= count * size;
  }
  return text;
}
