import type { Shape, StructShape } from './kubernetes.js';

export type JsonSchema = Record<string, unknown>;

/**
 * The ajv schema of a shape: types for the typed fields, `required` for the fields Go always writes, and
 * everything else allowed, so only what the rules depend on is checked (a large pod costs microseconds).
 */
export function jsonSchemaOf(shape: Shape): JsonSchema {
  switch (shape.type) {
    case 'string':
    case 'boolean':
      return { type: shape.type };
    case 'any':
      return {};
    case 'list':
      return { type: 'array', items: jsonSchemaOf(shape.of) };
    case 'map':
      return { type: 'object', additionalProperties: jsonSchemaOf(shape.of) };
    case 'struct':
      return structSchema(shape);
  }
}

function structSchema(shape: StructShape): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  for (const [name, field] of Object.entries(shape.fields)) {
    if (field.type !== 'any') properties[name] = jsonSchemaOf(field);
  }
  const schema: JsonSchema = { type: 'object', properties };
  if (shape.always !== undefined && shape.always.length > 0) schema.required = [...shape.always];
  return schema;
}
