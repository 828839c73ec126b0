import fastJsonPatch, { type Operation } from 'fast-json-patch';
import type { Pod } from '../injection/index.js';
import { oneYamlDocument } from '../kube-shapes/one-yaml-document.js';
import { CliError, refusePrototypeKeys } from './io.js';

/** One Pod manifest in YAML or JSON, refused with a message naming `origin` when it is anything else. */
export function parsePod(text: string, origin: string): Pod {
  const value = oneYamlDocument(text, origin, 'Pod', (message) => new CliError(message));
  refusePrototypeKeys(value, origin);
  if (value === null || typeof value !== 'object' || (value as { kind?: unknown }).kind !== 'Pod') {
    throw new CliError(`${origin}: not a Pod manifest (kind Pod)`);
  }
  return value as Pod;
}

/** The response's base64 JSON patch as operations; none for an answer without a patch. */
export function decodePatch(patch: string | undefined): Operation[] {
  if (patch === undefined) return [];
  return JSON.parse(Buffer.from(patch, 'base64').toString('utf8')) as Operation[];
}

/** The pod as kube-apiserver stores it after applying the response's patch; `pod` itself is left alone. */
export function applyResponsePatch(pod: Pod, patch: string | undefined): Pod {
  if (patch === undefined) return pod;
  return fastJsonPatch.applyPatch(structuredClone(pod), decodePatch(patch), true, true).newDocument;
}
