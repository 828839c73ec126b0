/**
 * An RFC 6902 applier as strict as kube-apiserver's: `add` needs an existing parent, array indexes must be
 * within bounds (`-` appends), `remove`/`replace` of a missing path fail. Deliberately independent of the
 * library the product uses to build patches, so the two cannot share a bug.
 */
export interface PatchOperation {
  op: string;
  path: string;
  value?: unknown;
  from?: string;
}

type Container = Record<string, unknown> | unknown[];

export function applyStrict<T>(document: T, operations: readonly PatchOperation[]): T {
  let root: unknown = structuredClone(document);
  for (const [index, operation] of operations.entries()) {
    try {
      root = applyOne(root, operation);
    } catch (error) {
      throw new Error(`patch op ${index} (${operation.op} ${operation.path}): ${(error as Error).message}`, {
        cause: error,
      });
    }
  }
  return root as T;
}

function applyOne(root: unknown, operation: PatchOperation): unknown {
  const tokens = parsePointer(operation.path);
  if (operation.op === 'test') {
    if (JSON.stringify(resolve(root, tokens)) !== JSON.stringify(operation.value)) throw new Error('test failed');
    return root;
  }
  if (tokens.length === 0) {
    if (operation.op === 'add' || operation.op === 'replace') return structuredClone(operation.value);
    throw new Error(`${operation.op} of the whole document`);
  }
  const parent = resolve(root, tokens.slice(0, -1));
  const key = tokens[tokens.length - 1] as string;
  if (parent === null || typeof parent !== 'object') throw new Error('parent is not an object or array');
  const container = parent as Container;
  switch (operation.op) {
    case 'add':
      if (!('value' in operation)) throw new Error('add without value');
      add(container, key, structuredClone(operation.value));
      return root;
    case 'remove':
      remove(container, key);
      return root;
    case 'replace':
      if (!('value' in operation)) throw new Error('replace without value');
      remove(container, key);
      add(container, key, structuredClone(operation.value));
      return root;
    default:
      throw new Error(`unsupported op ${operation.op}`);
  }
}

function add(container: Container, key: string, value: unknown): void {
  if (Array.isArray(container)) {
    const index = key === '-' ? container.length : arrayIndex(key);
    if (index > container.length) throw new Error(`index ${index} out of bounds (length ${container.length})`);
    container.splice(index, 0, value);
  } else {
    container[key] = value;
  }
}

function remove(container: Container, key: string): void {
  if (Array.isArray(container)) {
    const index = arrayIndex(key);
    if (index >= container.length) throw new Error(`index ${index} out of bounds (length ${container.length})`);
    container.splice(index, 1);
  } else {
    if (!Object.hasOwn(container, key)) throw new Error(`no member "${key}"`);
    delete container[key];
  }
}

function resolve(root: unknown, tokens: readonly string[]): unknown {
  let node = root;
  for (const token of tokens) {
    if (Array.isArray(node)) {
      const index = arrayIndex(token);
      if (index >= node.length) throw new Error(`index ${index} out of bounds`);
      node = node[index];
    } else if (node !== null && typeof node === 'object' && Object.hasOwn(node, token)) {
      node = (node as Record<string, unknown>)[token];
    } else {
      throw new Error(`path element "${token}" does not exist`);
    }
  }
  return node;
}

function arrayIndex(token: string): number {
  if (!/^(0|[1-9][0-9]*)$/.test(token)) throw new Error(`"${token}" is not an array index`);
  return Number(token);
}

function parsePointer(pointer: string): string[] {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) throw new Error(`"${pointer}" is not a JSON pointer`);
  return pointer
    .slice(1)
    .split('/')
    .map((token) => {
      if (/~[^01]|~$/.test(token)) throw new Error(`bad escape in "${token}"`);
      return token.replace(/~1/g, '/').replace(/~0/g, '~');
    });
}
