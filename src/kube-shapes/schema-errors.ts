/**
 * What is wrong with a value a shape schema refused (src/kube-shapes/json-schema.ts), told from ajv's first error as
 * `field F <problem>`. Each border names the field its own way: a pod by its field path, as kube-apiserver does
 * (`object.spec.containers.0.name`), a config value by its JSON pointer (`/csiSidecar/0/name`).
 */
import type { ErrorObject } from 'ajv';

/** How a border names the field at these JSON pointer tokens (none: the value itself). */
export type FieldName = (tokens: readonly string[]) => string;

export function describeShapeError(errors: readonly ErrorObject[] | null | undefined, name: FieldName): string {
  const first = errors?.[0];
  if (first === undefined) return 'does not match the expected shape';
  const tokens = first.instancePath.split('/').slice(1);
  if (first.keyword === 'required') {
    const missing = String((first.params as { missingProperty?: unknown }).missingProperty);
    return `field ${name([...tokens, missing])} is required`;
  }
  if (first.keyword === 'enum' || first.keyword === 'const') {
    const allowed = first.params as { allowedValues?: unknown[]; allowedValue?: unknown };
    const values = allowed.allowedValues ?? [allowed.allowedValue];
    return `field ${name(tokens)} must be one of ${values.map((v) => JSON.stringify(v)).join(', ')}`;
  }
  return `field ${name(tokens)} ${first.message ?? 'is invalid'}`;
}

/** The field's JSON pointer. */
export function pointerName(tokens: readonly string[]): string {
  return tokens.length === 0 ? '(top level)' : `/${tokens.join('/')}`;
}

/** The field's path from `root`, dot-separated. */
export function fieldPathName(root: string): FieldName {
  return (tokens) => [root, ...tokens].filter((token) => token !== '').join('.') || '(top level)';
}
