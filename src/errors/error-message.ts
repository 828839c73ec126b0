/** What a caught value says: its message, a system error's code, and where a JSON.parse error points. */

/** The message of anything thrown: an Error's own, or the value as text (a rejection need not be an Error). */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * The first line of what a caught value says, for a log field, an Event or a denial: client-node's and the YAML
 * reader's messages go on with a response body or a code frame that would flood one line.
 */
export function errorLine(error: unknown): string {
  return errorMessage(error).split('\n', 1)[0] ?? '';
}

/** The `code` a Node system error carries (`ENOENT`, `EADDRINUSE`), or undefined. */
export function errorCode(error: unknown): string | undefined {
  return error instanceof Error && 'code' in error && typeof error.code === 'string' ? error.code : undefined;
}

/** Where V8's JSON.parse error points, as 1-based line and column of `text`; undefined when it names no position. */
export function jsonErrorPosition(text: string, error: unknown): { line: number; column: number } | undefined {
  const message = error instanceof Error ? error.message : '';
  const position = /\bat position (\d+)\b/.exec(message)?.[1];
  if (position === undefined) return undefined;
  const before = text.slice(0, Number(position));
  return { line: before.split('\n').length, column: before.length - before.lastIndexOf('\n') };
}
