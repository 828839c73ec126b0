/** JSON Pointer escaping of one key (RFC 6901): `~` first, so an escaped `/` is not escaped again. */
export function escapePointer(key: string): string {
  if (!key.includes('~') && !key.includes('/')) return key;
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** The key one escaped JSON Pointer token stands for: `~1` first, so `~01` gives `~1`, not `/`. */
export function unescapePointer(token: string): string {
  if (!token.includes('~')) return token;
  return token.replace(/~1/g, '/').replace(/~0/g, '~');
}
