/**
 * Runtimes that serve HTTPS, as upstream OpenKruise Agents reaches them (pkg/utils/runtime/transport.go):
 *
 * - a Sandbox advertises its runtime's HTTPS port in the annotation RUNTIME_TLS_PORT; absent or empty means
 *   plain HTTP, anything that is not an integer from 1 to 65535 is an error, never a fallback;
 * - the client dials the pod IP at that port but verifies the certificate as RUNTIME_TLS_SERVER_NAME (SNI and
 *   name check both): a pod IP has no DNS name, and the runtime's certificate names that instance of its
 *   wildcard;
 * - it trusts only the CA bundle `ca.crt` of one Secret, and presents `client.crt`/`client.key` from it when
 *   both are there (a runtime started with a client CA requires them); TLS 1.2 at least.
 *
 * Pure but for the agent, which only holds the material: nothing here reads the cluster (runtime-tls-source.ts).
 * Messages name the Secret and the data key, never a byte of the material.
 */
import { X509Certificate, createHash, createPrivateKey } from 'node:crypto';
import { Agent } from 'node:https';
import { checkServerIdentity, createSecureContext } from 'node:tls';
import { RUNTIME_TLS_PORT, RUNTIME_TLS_SERVER_NAME } from '../../sandbox/api.js';
import { RUNTIME_KEEP_ALIVE } from './http-call.js';

/** The Secret's data keys, upstream's names. */
export const RUNTIME_TLS_CA_KEY = 'ca.crt';
export const RUNTIME_TLS_CERT_KEY = 'client.crt';
export const RUNTIME_TLS_KEY_KEY = 'client.key';

export type RuntimeTlsPort = { kind: 'none' } | { kind: 'port'; port: number } | { kind: 'invalid'; reason: string };

/** The most of a bad annotation value a reason quotes. */
const SHOWN_CHARS = 16;

export function runtimeTlsPort(annotations: Readonly<Record<string, unknown>> | undefined): RuntimeTlsPort {
  const raw = annotations?.[RUNTIME_TLS_PORT];
  if (raw === undefined || raw === '') return { kind: 'none' };
  // Go's strconv.Atoi syntax, as upstream parses it: an optional sign, then decimal digits.
  const port = typeof raw === 'string' && /^[+-]?[0-9]+$/.test(raw) ? Number(raw) : Number.NaN;
  if (Number.isInteger(port) && port >= 1 && port <= 65535) return { kind: 'port', port };
  return {
    kind: 'invalid',
    reason: `annotation ${RUNTIME_TLS_PORT} is not a port from 1 to 65535: ${shown(raw)}`,
  };
}

function shown(raw: unknown): string {
  if (typeof raw !== 'string') return `a ${typeof raw}`;
  const text = JSON.stringify(raw.slice(0, SHOWN_CHARS));
  return raw.length > SHOWN_CHARS ? `${text}...` : text;
}

/** Checked material: every value is PEM that node's TLS accepts, the client pair matching. */
export interface RuntimeTlsBundle {
  /** PEM, one or more CA certificates: the only ones trusted for runtimes. */
  ca: string;
  client: { cert: string; key: string } | undefined;
  /** Names this material (a digest), so a re-read of the same Secret is known to change nothing. */
  digest: string;
}

/**
 * `data` is a Secret's `data` (base64 values), `secretName` how messages name it (NAMESPACE/NAME). As upstream:
 * `ca.crt` is required; `client.crt` and `client.key` come both or neither (a Secret cannot tell an empty key
 * from an absent one, so a lone one is refused rather than quietly dropped to server-only TLS).
 */
export function tlsBundleFromSecretData(
  data: Record<string, string> | undefined,
  secretName: string,
): RuntimeTlsBundle {
  const problem = (key: string, what: string): Error => new Error(`Secret ${secretName}: data key "${key}" ${what}`);
  const text = (key: string): string | undefined => {
    const value = data?.[key];
    if (value === undefined || value === '') return undefined;
    // kube-apiserver only stores valid base64; a value that is not came from somewhere else.
    if (typeof value !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(value.replace(/\s+/g, '')))
      throw problem(key, 'is not base64');
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    return decoded.trim() === '' ? undefined : decoded;
  };

  const ca = text(RUNTIME_TLS_CA_KEY);
  if (ca === undefined) throw problem(RUNTIME_TLS_CA_KEY, 'is missing or empty');
  const blocks = ca.match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0 || !blocks.every(isCertificate)) throw problem(RUNTIME_TLS_CA_KEY, 'is not a PEM CA bundle');

  const cert = text(RUNTIME_TLS_CERT_KEY);
  const key = text(RUNTIME_TLS_KEY_KEY);
  if ((cert === undefined) !== (key === undefined)) {
    const [set, unset] =
      cert === undefined ? [RUNTIME_TLS_KEY_KEY, RUNTIME_TLS_CERT_KEY] : [RUNTIME_TLS_CERT_KEY, RUNTIME_TLS_KEY_KEY];
    throw problem(set, `is set without "${unset}" (set both or neither)`);
  }
  let client: RuntimeTlsBundle['client'];
  if (cert !== undefined && key !== undefined) {
    if (!cert.includes('-----BEGIN CERTIFICATE-----') || !isCertificate(cert))
      throw problem(RUNTIME_TLS_CERT_KEY, 'is not a PEM certificate');
    const privateKey = parsedKey(key);
    if (privateKey === undefined) throw problem(RUNTIME_TLS_KEY_KEY, 'is not an unencrypted PEM private key');
    if (!new X509Certificate(cert).checkPrivateKey(privateKey))
      throw problem(RUNTIME_TLS_KEY_KEY, `is not the key of "${RUNTIME_TLS_CERT_KEY}"`);
    client = { cert, key };
  }
  try {
    // What the agent will do with it at each connection, done once here so a bad bundle fails now.
    createSecureContext({ ca, ...(client ?? {}), minVersion: 'TLSv1.2' });
  } catch {
    throw new Error(`Secret ${secretName}: node's TLS refuses the bundle`);
  }
  const digest = createHash('sha256')
    .update(JSON.stringify([ca, client?.cert ?? null, client?.key ?? null]))
    .digest('hex');
  return { ca, client, digest };
}

function isCertificate(pem: string): boolean {
  try {
    new X509Certificate(pem);
    return true;
  } catch {
    return false;
  }
}

function parsedKey(pem: string): ReturnType<typeof createPrivateKey> | undefined {
  if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(pem)) return undefined;
  try {
    return createPrivateKey(pem);
  } catch {
    // Not a key, or an encrypted one: there is no passphrase to give it.
    return undefined;
  }
}

/**
 * The agent for runtimes of this bundle: kept-alive as the plain runtime agent, and verifying the runtime as
 * RUNTIME_TLS_SERVER_NAME whatever host the URL names (the pod IP). A new bundle gets a new agent, so a
 * connection made with old material is never reused for new; the old agent's idle sockets close on their own.
 * The bundle's TLS context is made here once: given the PEM instead, node parses the CA and the client pair
 * again for every connection, and a delivery is a connection of its own to each pod.
 */
export function runtimeTlsAgent(bundle: RuntimeTlsBundle): Agent {
  return new Agent({
    ...RUNTIME_KEEP_ALIVE,
    secureContext: createSecureContext({
      ca: bundle.ca,
      ...(bundle.client === undefined ? {} : { cert: bundle.client.cert, key: bundle.client.key }),
      minVersion: 'TLSv1.2',
    }),
    servername: RUNTIME_TLS_SERVER_NAME,
    checkServerIdentity: (_host, cert) => checkServerIdentity(RUNTIME_TLS_SERVER_NAME, cert),
    rejectUnauthorized: true,
  });
}
