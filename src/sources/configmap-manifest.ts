import { parseAllDocuments } from 'yaml';
import { STARTUP_ERRORS } from '../errors.js';

export class ConfigMapManifestError extends Error {
  readonly code = STARTUP_ERRORS.configMapManifestInvalid.code;
}

/**
 * The `data` of a ConfigMap manifest, as an operator would `kubectl apply` it (YAML or JSON, which is YAML).
 * Anything that is not exactly one ConfigMap with string values is refused with a message naming `origin`.
 */
export function parseConfigMapManifest(text: string, origin: string): Record<string, string> {
  const documents = parseAllDocuments(text).filter((doc) => doc.contents !== null);
  if (documents.length !== 1) {
    throw new ConfigMapManifestError(`${origin}: expected one ConfigMap manifest, found ${documents.length} documents`);
  }
  const [document] = documents;
  if (document === undefined) throw new ConfigMapManifestError(`${origin}: empty manifest`);
  const firstError = document.errors[0];
  if (firstError !== undefined) {
    throw new ConfigMapManifestError(`${origin}: not valid YAML or JSON: ${firstError.message.split('\n')[0] ?? ''}`);
  }
  const manifest: unknown = document.toJS();
  if (!isObject(manifest) || manifest.kind !== 'ConfigMap' || manifest.apiVersion !== 'v1') {
    const kind = isObject(manifest) ? `kind ${JSON.stringify(manifest.kind)}` : typeof manifest;
    throw new ConfigMapManifestError(`${origin}: not a ConfigMap (apiVersion v1, kind ConfigMap); found ${kind}`);
  }
  const data = manifest.data ?? {};
  if (!isObject(data)) throw new ConfigMapManifestError(`${origin}: field data must be a map of strings`);
  const result: Record<string, string> = {};
  for (const [key, value] of Object.entries(data)) {
    if (typeof value !== 'string') {
      throw new ConfigMapManifestError(`${origin}: field data.${key} must be a string, found ${typeof value}`);
    }
    // "__proto__" is a valid ConfigMap key; a plain assignment would set the prototype and drop it.
    Object.defineProperty(result, key, { value, enumerable: true, writable: true, configurable: true });
  }
  return result;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
