import type { Failure } from '../errors/index.js';
import type { EnvVarsInjectionPolicy, RuntimeConfig } from '../injection/index.js';

/**
 * What the admission handler needs from the outside world, as plain data. The sources/ modules produce these;
 * the handler never learns whether they came from a file, an informer or a pod annotation.
 */
export type RuntimeSelection =
  | {
      ok: true;
      runtimes: string[];
      policy: EnvVarsInjectionPolicy;
      /** Where the runtimes were read, e.g. `Sandbox ns/name: spec.runtimes`; `explain` shows it. */
      source: string;
      /** The field the policy was read from; absent when none was set and the policy is None by default. */
      policySource?: string;
    }
  | { ok: false; denial: Failure };

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
       * The revision of these keys' configs in force (src/sources/config-revision.ts), undefined when one has none;
       * computed once per config version and set of keys.
       */
      revision: (keys: readonly string[]) => string | undefined;
    };
