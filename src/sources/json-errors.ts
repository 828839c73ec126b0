import type { ErrorObject } from 'ajv';
import { describeShapeError, pointerName } from '../shapes/schema-errors.js';
import { errorMessage, jsonErrorPosition } from '../util/error-message.js';

/** "invalid JSON at line L column C: reason", from whatever position V8 reports. */
export function describeJsonError(text: string, error: unknown): string {
  const message = errorMessage(error);
  const where = jsonErrorPosition(text, error);
  if (where === undefined) return `invalid JSON: ${message}`;
  const { line, column } = where;
  const reason = message.replace(/\s*(in JSON )?at position \d+.*$/, '');
  return `invalid JSON at line ${line} column ${column}: ${reason}`;
}

/** The first schema error as "field /a/0/b must be string". */
export function describeSchemaError(errors: readonly ErrorObject[] | null | undefined): string {
  return describeShapeError(errors, pointerName);
}
