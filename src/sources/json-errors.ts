import type { ErrorObject } from 'ajv';

/** "invalid JSON at line L column C: reason", from whatever position V8 reports. */
export function describeJsonError(text: string, error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const position = /at position (\d+)/.exec(message)?.[1];
  if (position === undefined) return `invalid JSON: ${message}`;
  const offset = Number(position);
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  const column = offset - before.lastIndexOf('\n');
  const reason = message.replace(/\s*(in JSON )?at position \d+.*$/, '');
  return `invalid JSON at line ${line} column ${column}: ${reason}`;
}

/** The first schema error as "field /a/0/b must be string". */
export function describeSchemaError(errors: readonly ErrorObject[] | null | undefined): string {
  const first = errors?.[0];
  if (first === undefined) return 'does not match the expected shape';
  const field = first.instancePath === '' ? '(top level)' : first.instancePath;
  return `field ${field} ${first.message ?? 'is invalid'}`;
}
