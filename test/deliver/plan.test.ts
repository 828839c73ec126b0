import { describe, expect, it } from 'vitest';
import { backoffDelay } from '../../src/deliver/backoff.js';
import { leaseAction, observe } from '../../src/deliver/lease.js';
import { deliverySteps, envPaths } from '../../src/deliver/plan.js';

const PATHS = envPaths('/var/sandbox');

describe('deliverySteps', () => {
  it('writes env.sh under its own name when .env_ready is absent (nothing reads it yet), then .env_ready', () => {
    expect(deliverySteps(PATHS, { found: false }, 'C', 'M')).toEqual([
      { op: 'upload', path: '/var/sandbox/env.sh', body: 'C' },
      { op: 'upload', path: '/var/sandbox/.env_ready', body: 'M' },
    ]);
  });

  it('rewrites through a temporary name and a Move when .env_ready holds another content', () => {
    expect(deliverySteps(PATHS, { found: true, body: 'OLD' }, 'C', 'M')).toEqual([
      { op: 'upload', path: '/var/sandbox/.env.sh.tmp', body: 'C' },
      { op: 'move', source: '/var/sandbox/.env.sh.tmp', destination: '/var/sandbox/env.sh' },
      { op: 'upload', path: '/var/sandbox/.env_ready', body: 'M' },
    ]);
  });

  it('does nothing when .env_ready already names this content', () => {
    expect(deliverySteps(PATHS, { found: true, body: 'M' }, 'C', 'M')).toEqual([]);
  });
});

describe('backoffDelay', () => {
  const settings = { minMs: 100, maxMs: 1000 };
  it('doubles from the minimum, is capped, and jitters within the upper half', () => {
    expect([1, 2, 3, 4, 5, 40].map((n) => backoffDelay(n, settings, () => 1))).toEqual([
      100, 200, 400, 800, 1000, 1000,
    ]);
    expect([1, 2, 5].map((n) => backoffDelay(n, settings, () => 0))).toEqual([50, 100, 500]);
  });
});

describe('leaseAction', () => {
  const record = (holder: string, renewTime = 't1') => ({ holder, renewTime, durationSeconds: 10 });
  it('creates a missing Lease, renews its own, takes an empty one, follows a live holder', () => {
    expect(leaseAction('me', undefined, 0)).toBe('create');
    expect(leaseAction('me', observe(undefined, record('me'), 0), 1)).toBe('renew');
    expect(leaseAction('me', observe(undefined, record(''), 0), 1)).toBe('take');
    expect(leaseAction('me', observe(undefined, record('other'), 0), 5000)).toBe('follow');
  });

  it("takes the Lease only when the holder's record stayed the same for the whole duration, by our clock", () => {
    const first = observe(undefined, record('other', 't1'), 0);
    expect(leaseAction('me', first, 10_001)).toBe('take');
    const renewed = observe(first, record('other', 't2'), 9000);
    expect(leaseAction('me', renewed, 10_001)).toBe('follow');
    expect(observe(renewed, record('other', 't2'), 12_000)).toBe(renewed);
  });
});
