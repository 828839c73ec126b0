/**
 * What preflight reads from a cluster, each object once, as the API server sent it. The checks
 * (checks-platform.ts, checks-install.ts, injector-image.ts) decide from these facts alone, so each is a pure
 * function that the tests feed plain objects.
 */

export type Json = Record<string, unknown>;

/** One read: the object, a 404, or another answer (403, a timeout), which fails only the checks that need it. */
export type Read<T = Json> =
  { state: 'found'; object: T } | { state: 'absent' } | { state: 'unreadable'; error: string };

/** An object's place, as the messages name it. */
export interface Place {
  namespace: string;
  name: string;
}

export interface PreflightFacts {
  /** Wall time of the reads, ms since the epoch: a Lease is judged against it. */
  now: number;
  /** GET /version. */
  version: Read;
  /** The Sandbox CustomResourceDefinition. */
  crd: Read;
  configMap: Place & { read: Read };
  /** Upstream's controller Deployment, whose service account creates the Sandbox pods. */
  controller: Place & { read: Read };
  /** The `--trusted-creators` flag, when given: it wins over the injector Deployment's. */
  trustedCreatorsFlag: string | undefined;
  webhookConfiguration: { name: string; read: Read };
  /** Our webhook Deployment; no place when neither the flag nor the webhook configuration names a namespace. */
  injector: (Place & { read: Read }) | undefined;
  /** The EndpointSlices of the webhook's Service; undefined when the configuration names no Service. */
  endpointSlices: (Place & { read: Read<Json[]> }) | undefined;
  /** Every Sandbox (an absent CRD reads as none). */
  sandboxes: Read<Json[]>;
  /** `--auto`: check deliver-env whatever the Sandboxes say. */
  autoFlag: boolean;
  lease: Place & { read: Read };
  /** `--image`, when given: it wins over the injector Deployment's wrapper image. */
  imageFlag: string | undefined;
  /** The service accounts of Auto Sandboxes whose pod template names no pull secret, keyed `NS/NAME`. */
  serviceAccounts: ReadonlyMap<string, Read>;
  /** `--before-install`: the checks of our own install are left out. */
  beforeInstall: boolean;
}

export const CHECK_NAMES = [
  'kubernetes-version',
  'sandbox-crd',
  'injection-config',
  'trusted-creators',
  'webhook-configuration',
  'webhook-endpoints',
  'deliver-env',
  'injector-image',
] as const;
export type CheckName = (typeof CHECK_NAMES)[number];

/** One line of the report; `fix` says what to do, and is null when the check passes. */
export interface CheckResult {
  name: CheckName;
  ok: boolean;
  message: string;
  fix: string | null;
}

export const pass = (name: CheckName, message: string): CheckResult => ({ name, ok: true, message, fix: null });
export const fail = (name: CheckName, message: string, fix: string): CheckResult => ({
  name,
  ok: false,
  message,
  fix,
});

/** A field of an untyped object, following `path`; undefined as soon as a step is not an object. */
export function field(value: unknown, ...path: (string | number)[]): unknown {
  let current = value;
  for (const step of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string | number, unknown>)[step];
  }
  return current;
}

export function stringField(value: unknown, ...path: (string | number)[]): string | undefined {
  const found = field(value, ...path);
  return typeof found === 'string' ? found : undefined;
}

export function listField(value: unknown, ...path: (string | number)[]): unknown[] {
  const found = field(value, ...path);
  return Array.isArray(found) ? found : [];
}

export const placeName = ({ namespace, name }: Place): string => `${namespace}/${name}`;
