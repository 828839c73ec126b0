/** JSON Pointer escaping of one key (RFC 6901): `~` first, so an escaped `/` is not escaped again. */
export function escapePointer(key: string): string {
  if (!key.includes('~') && !key.includes('/')) return key;
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}
