/** The message of anything thrown: an Error's own, or the value as text (a rejection need not be an Error). */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The `code` a Node system error carries (`ENOENT`, `EADDRINUSE`), or undefined. */
export function errorCode(error: unknown): string | undefined {
  return error instanceof Error && 'code' in error && typeof error.code === 'string' ? error.code : undefined;
}
