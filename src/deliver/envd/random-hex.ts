/**
 * Random hex text for names that must not collide (a temporary file's nonce, a multipart boundary), drawn
 * from the system's CSPRNG a block at a time: each call to it costs far more than the few bytes a name needs,
 * and a burst of deliveries draws three names each. None of these names is a secret.
 */
import { randomFillSync } from 'node:crypto';

const BLOCK_BYTES = 4096;
const block = Buffer.alloc(BLOCK_BYTES);
let used = BLOCK_BYTES;

/** `bytes` random bytes (at most BLOCK_BYTES), as 2 * `bytes` lowercase hex digits. */
export function randomHex(bytes: number): string {
  if (!Number.isInteger(bytes) || bytes < 1 || bytes > BLOCK_BYTES) throw new RangeError(`randomHex(${bytes})`);
  if (used + bytes > BLOCK_BYTES) {
    randomFillSync(block);
    used = 0;
  }
  const text = block.toString('hex', used, used + bytes);
  used += bytes;
  return text;
}
