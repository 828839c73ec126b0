import { Ajv, type ErrorObject } from 'ajv';
import { readLikeGo } from '../kube-shapes/go-json.js';
import { jsonSchemaOf } from '../kube-shapes/json-schema.js';
import { describeShapeError, pointerName } from '../kube-shapes/schema-errors.js';
import { runtimeConfig, type RuntimeConfig } from '../kube-shapes/kubernetes.js';
import { systemClock, type Clock } from '../time/clock.js';
import { deepFreezeObjects } from '../json/fast-json.js';
import { errorMessage, jsonErrorPosition } from '../errors/error-message.js';
import { keyDigest, RevisionMemo } from './config-revision.js';

export interface ConfigEntry {
  /** The config in force for this key: the current value, or the last valid one when the current is bad. */
  config: RuntimeConfig | undefined;
  /** Set when the current value is bad; with `config` set, that config is an earlier version. */
  error: string | undefined;
}

export type ConfigSnapshot =
  | { present: false; name: string }
  | {
      present: true;
      name: string;
      entries: ReadonlyMap<string, ConfigEntry>;
      valid: ReadonlyMap<string, RuntimeConfig>;
      /**
       * The revision of these keys' configs in force (src/config/config-revision.ts), undefined when one has none;
       * computed once per config version and set of keys.
       */
      revision: (keys: readonly string[]) => string | undefined;
    };

export const DEFAULT_CONFIG_NAMESPACE = 'sandbox-system';
export const DEFAULT_CONFIG_NAME = 'sandbox-injection-config';

const validateRuntimeConfig = new Ajv({ allErrors: false, strict: true }).compile<RuntimeConfig>(
  jsonSchemaOf(runtimeConfig),
);

export interface InvalidKey {
  key: string;
  message: string;
  /** Whether an earlier valid version of the key is used instead. */
  fellBack: boolean;
}

/** Fields of a key that Go ignores (and so do we): reported once per config version, never refused. */
export interface UnknownFields {
  key: string;
  /** JSON pointers into the key's value, e.g. `/csiSidecar/0/imagePullSecret`. */
  fields: string[];
}

export interface ConfigUpdateReport {
  invalidKeys: InvalidKey[];
  unknownFields: UnknownFields[];
}

export type ParsedKey = { ok: true; config: RuntimeConfig; unknownFields: string[] } | { ok: false; message: string };

/**
 * One ConfigMap key's JSON value, read as the Sandbox controller's Go code reads it (nulls absent, field names
 * case-insensitive, unknown fields ignored), then checked against the types the rules read. It is refused only
 * where Go would refuse it too: not JSON, or a wrong type.
 */
export function parseRuntimeConfig(text: string): ParsedKey {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    return { ok: false, message: describeJsonError(text, error) };
  }
  const { value, unknownFields } = readLikeGo(parsed, runtimeConfig);
  if (!validateRuntimeConfig(value)) {
    return { ok: false, message: describeSchemaError(validateRuntimeConfig.errors) };
  }
  // Configs are shared by every admission: frozen, an accidental write into one is a loud error. Arrays stay
  // writable, as no array that goes into a patch may be frozen (deepFreezeObjects); the tests freeze them too
  // (test/support/freeze-all.ts), so an edit that writes into one fails there.
  return { ok: true, config: deepFreezeObjects(value), unknownFields };
}

/**
 * The injection config as last seen, parsed once per change rather than per admission. Each key keeps its
 * last valid version, so a bad edit of one key falls back to what worked instead of breaking admissions.
 */
export class InjectionConfigStore {
  private readonly lastValid = new Map<string, RuntimeConfig>();
  private current: ConfigSnapshot;
  private updatedAt: number | undefined;

  constructor(
    readonly configMapName = `${DEFAULT_CONFIG_NAMESPACE}/${DEFAULT_CONFIG_NAME}`,
    /** Whose wall time `loadedAt` is. */
    private readonly clock: Clock = systemClock,
  ) {
    this.current = { present: false, name: configMapName };
  }

  /** Wall time, ms since the epoch, of the last update; undefined before the first. */
  get loadedAt(): number | undefined {
    return this.updatedAt;
  }

  snapshot(): ConfigSnapshot {
    return this.current;
  }

  /** Replaces the ConfigMap's data; `undefined` means the ConfigMap does not exist. */
  update(data: Readonly<Record<string, string>> | undefined): ConfigUpdateReport {
    this.updatedAt = this.clock.now();
    if (data === undefined) {
      this.current = { present: false, name: this.configMapName };
      return { invalidKeys: [], unknownFields: [] };
    }
    const entries = new Map<string, ConfigEntry>();
    const valid = new Map<string, RuntimeConfig>();
    const invalidKeys: InvalidKey[] = [];
    const unknownFields: UnknownFields[] = [];
    for (const [key, text] of Object.entries(data)) {
      if (text.trim() === '') continue; // an empty key is treated as a missing one
      const parsed = parseRuntimeConfig(text);
      if (parsed.ok) {
        this.lastValid.set(key, parsed.config);
        entries.set(key, { config: parsed.config, error: undefined });
        valid.set(key, parsed.config);
        if (parsed.unknownFields.length > 0) unknownFields.push({ key, fields: parsed.unknownFields });
        continue;
      }
      const fallback = this.lastValid.get(key);
      entries.set(key, { config: fallback, error: parsed.message });
      if (fallback !== undefined) valid.set(key, fallback);
      invalidKeys.push({ key, message: parsed.message, fellBack: fallback !== undefined });
    }
    const revisions = new RevisionMemo((key) => {
      const config = valid.get(key);
      return config === undefined ? undefined : keyDigest(config);
    });
    this.current = {
      present: true,
      name: this.configMapName,
      entries,
      valid,
      revision: (keys) => revisions.revision(keys),
    };
    return { invalidKeys, unknownFields };
  }
}

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
