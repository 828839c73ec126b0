import { EnvFileError } from './errors.js';

/**
 * Quote a value so that bash, reading it as one word, yields exactly these characters.
 *
 * Inside single quotes bash interprets nothing at all — not `$`, backticks, backslashes or newlines —
 * so the only character that needs care is the single quote itself, written as `'\''` (close the
 * quote, an escaped quote, reopen). That makes the result independent of shell options and locale
 * (UTF-8 never uses the byte 0x27 inside a multi-byte character).
 */
export function shellQuote(value: string): string {
  assertRepresentable(value);
  return `'${value.replaceAll("'", "'\\''")}'`;
}

// A paired surrogate is one code point under the u flag, so this matches only unpaired halves.
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Refuse values that cannot survive the trip: environment strings are NUL-terminated in the kernel's
 * execve interface, and an unpaired UTF-16 surrogate has no UTF-8 encoding, so the bytes a process
 * would see could not equal what was asked for.
 */
function assertRepresentable(value: string): void {
  if (value.includes('\0')) {
    throw new EnvFileError('value contains a NUL byte, which an environment variable cannot hold');
  }
  if (LONE_SURROGATE.test(value)) {
    throw new EnvFileError('value contains an unpaired UTF-16 surrogate, which has no UTF-8 encoding');
  }
}
