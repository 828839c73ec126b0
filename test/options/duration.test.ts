/** Durations read as Go's time.ParseDuration reads them, into milliseconds; bare numbers refused. */
import { describe, expect, it } from 'vitest';
import { formatDuration, parseDuration } from '../../src/options/duration.js';

describe('parseDuration', () => {
  it.each([
    ['0', 0],
    ['0s', 0],
    ['250ms', 250],
    ['10s', 10_000],
    ['1m30s', 90_000],
    ['1h', 3_600_000],
    ['2h45m0.5s', 9_900_500],
    ['1.5s', 1500],
    ['.5m', 30_000],
    ['1.s', 1000],
    ['1000us', 1],
    ['1000µs', 1],
    ['1000μs', 1],
    ['3000000ns', 3],
    ['0.1s', 100],
    ['0.3s', 300],
    ['1s500ms', 1500],
    ['+5s', 5000],
    ['-5s', -5000],
  ])('reads %j as %d ms', (text, ms) => {
    expect(parseDuration(text)).toEqual({ ok: true, ms });
  });

  it.each([
    ['10', '"10" has no unit: add one, such as 10s or 10ms'],
    ['1.5', '"1.5" has no unit: add one, such as 1.5s or 1.5ms'],
    ['2d', '"2d" has an unknown unit "d"'],
    ['1m30', '"1m30" has a number without a unit'],
    ['', '"" is not a duration'],
    ['s', '"s" is not a duration'],
    [' 10s', '" 10s" is not a duration'],
    ['10 s', '"10 s" has an unknown unit " s"'],
    ['1500us', '"1500us" is not a whole number of milliseconds'],
    ['1ns', '"1ns" is not a whole number of milliseconds'],
    ['1e3s', '"1e3s" has an unknown unit "e"'],
    ['99999999999h', '"99999999999h" is longer than any timer takes'],
  ])('refuses %j, saying why', (text, problem) => {
    const read = parseDuration(text);
    expect(read.ok).toBe(false);
    expect(read.ok ? '' : read.problem).toContain(problem);
  });
});

describe('formatDuration', () => {
  it.each([
    [0, '0s'],
    [1, '1ms'],
    [1000, '1s'],
    [90_500, '1m30s500ms'],
    [120_000, '2m'],
    [3_600_000, '1h'],
    [-1500, '-1s500ms'],
  ])('writes %d ms as %j, which reads back the same', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
    expect(parseDuration(text)).toEqual({ ok: true, ms });
  });
});
