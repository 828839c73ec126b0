import { describe, expect, it } from 'vitest';
import { BackoffRateLimiter } from '../../../src/deliver/controller/rate-limiter.js';

const settings = { minMs: 100, maxMs: 1000 };

describe('BackoffRateLimiter', () => {
  it('makes each failure in a row of a key wait twice as long, up to the ceiling', () => {
    const limiter = new BackoffRateLimiter(settings, () => 1);
    expect([1, 2, 3, 4, 5, 6].map(() => limiter.when('a'))).toEqual([100, 200, 400, 800, 1000, 1000]);
    expect(limiter.failures('a')).toBe(6);
  });

  it('draws each wait between half its ceiling and the whole of it', () => {
    const low = new BackoffRateLimiter(settings, () => 0);
    expect([low.when('a'), low.when('a')]).toEqual([50, 100]);
    const mid = new BackoffRateLimiter(settings, () => 0.5);
    expect([mid.when('a'), mid.when('a')]).toEqual([75, 150]);
  });

  it('counts each key apart, and a forgotten key starts afresh', () => {
    const limiter = new BackoffRateLimiter(settings, () => 1);
    limiter.when('a');
    limiter.when('a');
    limiter.when('b');
    expect([limiter.failures('a'), limiter.failures('b'), limiter.failures('c')]).toEqual([2, 1, 0]);
    limiter.forget('a');
    expect(limiter.failures('a')).toBe(0);
    expect(limiter.when('a')).toBe(100);
    expect(limiter.when('b')).toBe(200);
  });

  it('clear makes every key start afresh', () => {
    const limiter = new BackoffRateLimiter(settings, () => 1);
    limiter.when('a');
    limiter.when('b');
    limiter.clear();
    expect([limiter.failures('a'), limiter.failures('b')]).toEqual([0, 0]);
    expect(limiter.when('b')).toBe(100);
  });
});
