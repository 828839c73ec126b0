import { STARTUP_ERRORS } from '../errors/index.js';
import { oneYamlDocument } from '../kube-shapes/one-yaml-document.js';

const ManifestInvalid = STARTUP_ERRORS.configMapManifestInvalid.Error;

/**
 * The `data` of a ConfigMap manifest, as an operator would `kubectl apply` it (YAML or JSON, which is YAML).
 * Anything that is not exactly one ConfigMap with string values is refused with a message naming `origin`.
 */
export function parseConfigMapManifest(text: string, origin: string): Record<string, string> {
  const manifest = oneYamlDocument(text, origin, 'ConfigMap', (message) => new ManifestInvalid(message));
  if (!isObject(manifest) || manifest.kind !== 'ConfigMap' || manifest.apiVersion !== 'v1') {
    const kind = isObject(manifest) ? `kind ${JSON.stringify(manifest.kind)}` : typeof manifest;
    throw new ManifestInvalid(`${origin}: not a ConfigMap (apiVersion v1, kind ConfigMap); found ${kind}`);
  }
  const data = manifest.data ?? {};
  if (!isObject(data)) throw new ManifestInvalid(`${origin}: field data must be a map of strings`);
  const result: Record<string, string> = {};
  for (const [key, value] of Object.entries(data)) {
    if (typeof value !== 'string') {
      throw new ManifestInvalid(`${origin}: field data.${key} must be a string, found ${typeof value}`);
    }
    // "__proto__" is a valid ConfigMap key; a plain assignment would set the prototype and drop it.
    Object.defineProperty(result, key, { value, enumerable: true, writable: true, configurable: true });
  }
  return result;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
