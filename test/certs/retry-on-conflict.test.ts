/** The read-modify-write retry both writes of self-managed certificates share (src/certs/retry-on-conflict.ts). */
import { ApiException } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { retryOnConflict } from '../../src/certs/retry-on-conflict.js';
import { STARTUP_ERRORS } from '../../src/errors/index.js';

const conflict = (): ApiException<string> => new ApiException(409, 'Conflict', 'the object has been modified', {});

describe('retryOnConflict', () => {
  it('returns what the first attempt that does not conflict returns, telling of each conflict', async () => {
    const conflicts: number[] = [];
    const attempts: number[] = [];
    const result = await retryOnConflict(
      'Secret ns/name',
      (n) => {
        attempts.push(n);
        return n < 3 ? Promise.reject(conflict()) : Promise.resolve(`written at attempt ${n}`);
      },
      (n) => conflicts.push(n),
    );
    expect(result).toBe('written at attempt 3');
    expect(attempts).toEqual([1, 2, 3]);
    expect(conflicts).toEqual([1, 2]);
  });

  it('gives up after five conflicts, naming the object', async () => {
    let attempts = 0;
    const failed = retryOnConflict('MutatingWebhookConfiguration hooks', () => {
      attempts += 1;
      return Promise.reject(conflict());
    });
    await expect(failed).rejects.toBeInstanceOf(STARTUP_ERRORS.certificateConflict.Error);
    await expect(failed).rejects.toThrow(
      'MutatingWebhookConfiguration hooks kept changing under 5 read-modify-write attempts',
    );
    expect(attempts).toBe(5);
  });

  it('passes any other failure through at once', async () => {
    const forbidden = new ApiException(403, 'Forbidden', 'no', {});
    let attempts = 0;
    await expect(
      retryOnConflict('Secret ns/name', () => {
        attempts += 1;
        return Promise.reject(forbidden);
      }),
    ).rejects.toBe(forbidden);
    expect(attempts).toBe(1);
  });
});
