/** Where V8's JSON.parse error points, as 1-based line and column of `text`; undefined when it names no position. */
export function jsonErrorPosition(text: string, error: unknown): { line: number; column: number } | undefined {
  const message = error instanceof Error ? error.message : '';
  const position = /\bat position (\d+)\b/.exec(message)?.[1];
  if (position === undefined) return undefined;
  const before = text.slice(0, Number(position));
  return { line: before.split('\n').length, column: before.length - before.lastIndexOf('\n') };
}
