/**
 * What the one Secret holds, and its translation to and from `V1Secret`. Every replica derives its files and
 * the webhook's caBundle from this Secret only, so they agree as soon as they have read the same version.
 *
 * Keys (all PEM):
 * - `tls.crt`, `tls.key`   the serving pair (the `kubernetes.io/tls` type requires these two)
 * - `ca.crt`, `ca.key`     the CA that signed `tls.crt`
 * - `next-ca.crt`, `next-ca.key`   during a CA rotation: the new CA, already trusted, not yet signing
 * - `previous-ca.crt`      after a CA rotation: the old CA, still trusted until it expires or the next rotation
 *
 * A key that is missing or does not parse reads as absent; the planner then replaces what it needs, so a
 * damaged Secret repairs itself instead of stopping the webhook.
 */
import type { V1Secret } from '@kubernetes/client-node';
import { INJECTOR_DOMAIN } from '../sandbox/api.js';
import { certifiedKey, issuedBy, parseCertificate, type CertifiedKey } from './pki.js';

export const SECRET_KEYS = {
  cert: 'tls.crt',
  key: 'tls.key',
  ca: 'ca.crt',
  caKey: 'ca.key',
  nextCa: 'next-ca.crt',
  nextCaKey: 'next-ca.key',
  previousCa: 'previous-ca.crt',
} as const;

export const ANNOTATIONS = {
  /** Counts the writes of this Secret; the webhook configuration records the one its caBundle came from. */
  generation: `${INJECTOR_DOMAIN}/generation`,
  /** When the next CA joined the trust bundle; it signs only once the overlap has passed since then. */
  nextCaStagedAt: `${INJECTOR_DOMAIN}/next-ca-staged-at`,
  /** On the MutatingWebhookConfiguration: `<secret uid>/<generation>` that its caBundle reflects. */
  bundleSource: `${INJECTOR_DOMAIN}/ca-bundle-source`,
} as const;

export interface NextCa {
  ca: CertifiedKey;
  stagedAt: Date;
}

/** The Secret's certificates, each present only when valid. */
export interface CertState {
  ca: CertifiedKey | undefined;
  /** Present only when it matches its key and was signed by `ca`. */
  serving: CertifiedKey | undefined;
  next: NextCa | undefined;
  previousCaPem: string | undefined;
  generation: number;
}

export const EMPTY_STATE: CertState = {
  ca: undefined,
  serving: undefined,
  next: undefined,
  previousCaPem: undefined,
  generation: 0,
};

export function stateFromSecret(secret: V1Secret): CertState {
  const data = secret.data ?? {};
  const text = (key: string): string | undefined => {
    const value = data[key];
    return value === undefined ? undefined : Buffer.from(value, 'base64').toString('utf8');
  };
  const pair = (certKey: string, keyKey: string): CertifiedKey | undefined => {
    const cert = text(certKey);
    const key = text(keyKey);
    if (cert === undefined || key === undefined) return undefined;
    const parsed = certifiedKey(cert, key);
    return parsed?.cert.ca === true ? parsed : undefined;
  };

  const ca = pair(SECRET_KEYS.ca, SECRET_KEYS.caKey);
  const annotations = secret.metadata?.annotations ?? {};
  return {
    ca,
    serving: servingPair(text(SECRET_KEYS.cert), text(SECRET_KEYS.key), ca),
    next: nextCa(pair(SECRET_KEYS.nextCa, SECRET_KEYS.nextCaKey), annotations[ANNOTATIONS.nextCaStagedAt]),
    previousCaPem: caCertificate(text(SECRET_KEYS.previousCa)),
    generation: generationOf(annotations[ANNOTATIONS.generation]),
  };
}

function servingPair(
  certPem: string | undefined,
  keyPem: string | undefined,
  ca: CertifiedKey | undefined,
): CertifiedKey | undefined {
  if (certPem === undefined || keyPem === undefined || ca === undefined) return undefined;
  const serving = certifiedKey(certPem, keyPem);
  return serving !== undefined && !serving.cert.ca && issuedBy(serving.cert, ca.cert) ? serving : undefined;
}

function nextCa(ca: CertifiedKey | undefined, stagedAt: string | undefined): NextCa | undefined {
  if (ca === undefined) return undefined;
  const at = stagedAt === undefined ? Number.NaN : Date.parse(stagedAt);
  // A staged CA without a readable time is kept, dated at the epoch: the overlap has long passed, so the
  // next reconcile promotes it rather than staging yet another CA.
  return { ca, stagedAt: new Date(Number.isNaN(at) ? 0 : at) };
}

function caCertificate(pem: string | undefined): string | undefined {
  if (pem === undefined) return undefined;
  return parseCertificate(pem)?.ca === true ? pem : undefined;
}

function generationOf(value: string | undefined): number {
  const n = value === undefined ? Number.NaN : Number(value);
  return Number.isSafeInteger(n) && n >= 0 ? n : 0;
}

/**
 * The Secret as written. The `..data`-style files and the caBundle read the same fields, so what a replica
 * serves always comes from one version of this object.
 */
export function secretFromState(state: CertState, name: string, namespace: string, base?: V1Secret): V1Secret {
  const b64 = (pem: string): string => Buffer.from(pem, 'utf8').toString('base64');
  const data: Record<string, string> = {};
  if (state.serving !== undefined) {
    data[SECRET_KEYS.cert] = b64(state.serving.certPem);
    data[SECRET_KEYS.key] = b64(state.serving.keyPem);
  }
  if (state.ca !== undefined) {
    data[SECRET_KEYS.ca] = b64(state.ca.certPem);
    data[SECRET_KEYS.caKey] = b64(state.ca.keyPem);
  }
  if (state.next !== undefined) {
    data[SECRET_KEYS.nextCa] = b64(state.next.ca.certPem);
    data[SECRET_KEYS.nextCaKey] = b64(state.next.ca.keyPem);
  }
  if (state.previousCaPem !== undefined) data[SECRET_KEYS.previousCa] = b64(state.previousCaPem);

  // Annotations and labels others put on the Secret are kept; ours are rewritten.
  const annotations: Record<string, string> = { ...(base?.metadata?.annotations ?? {}) };
  annotations[ANNOTATIONS.generation] = String(state.generation);
  if (state.next === undefined) delete annotations[ANNOTATIONS.nextCaStagedAt];
  else annotations[ANNOTATIONS.nextCaStagedAt] = state.next.stagedAt.toISOString();

  // managedFields are the server's bookkeeping: sending them back would claim fields for no manager.
  const baseMetadata = { ...(base?.metadata ?? {}) };
  delete baseMetadata.managedFields;
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    // A Secret's type cannot change: the one the install made it with stays (Opaque in the manifests and the
    // chart, which let an apply leave `data` alone; kubernetes.io/tls from releases that created it here).
    type: base?.type ?? 'Opaque',
    // Labels are the install's (an apply or a Helm upgrade would fight over one set here).
    metadata: { ...baseMetadata, name, namespace, annotations },
    data,
  };
}

/** The CAs a client must trust: every CA that signs or may soon sign, oldest first, no duplicates. */
export function trustBundle(state: CertState): string[] {
  const pems = [state.previousCaPem, state.ca?.certPem, state.next?.ca.certPem].filter(
    (pem): pem is string => pem !== undefined,
  );
  return [...new Set(pems.map(normalizePem))];
}

export function normalizePem(pem: string): string {
  return pem.trim().replace(/\r\n/g, '\n') + '\n';
}
