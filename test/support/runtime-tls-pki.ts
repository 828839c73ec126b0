/**
 * Certificates for TLS runtimes, made at test time: a CA, a runtime serving certificate with the names
 * upstream's agent-runtime certificate has (`agentruntime.sandbox.agents.kruise.io` and the wildcard
 * `*.sandbox.agents.kruise.io`), and a client certificate for mTLS. Built on the one maker of test
 * certificates (test/server/support/pki.ts); synchronous, so a test or an e2e set-up can make them inline.
 */
import { createCa, createClientCert, createServingCert, type CertAndKey } from '../server/support/pki.js';
import { RUNTIME_TLS_SERVER_NAME } from '../../src/sandbox/api.js';

export type { CertAndKey } from '../server/support/pki.js';

export const RUNTIME_WILDCARD_NAME = '*.sandbox.agents.kruise.io';

export interface RuntimeTlsPki {
  ca: CertAndKey;
  /** For RUNTIME_TLS_SERVER_NAME and the wildcard, signed by `ca`. */
  server: CertAndKey;
  /** A client certificate signed by `ca`, as a runtime with a client CA requires. */
  client: CertAndKey;
}

export function runtimeTlsPki(): RuntimeTlsPki {
  const ca = createCa('runtime test CA');
  return { ca, server: runtimeServerCert(ca), client: runtimeClientCert(ca) };
}

/** A serving certificate signed by `ca` for `dnsNames` (by default the runtime's two names). */
export function runtimeServerCert(
  ca: CertAndKey,
  dnsNames: string[] = [RUNTIME_TLS_SERVER_NAME, RUNTIME_WILDCARD_NAME],
  ipAddresses: string[] = [],
): CertAndKey {
  return createServingCert(ca, { commonName: dnsNames[0] ?? 'runtime', dnsNames, ipAddresses });
}

export function runtimeClientCert(ca: CertAndKey, user = 'sandbox-injector-deliver-env'): CertAndKey {
  return createClientCert(ca, user, []);
}

/**
 * A Secret's `data` (base64 values) under upstream's key names: `ca.crt`, and `client.crt`/`client.key` when a
 * client certificate is given.
 */
export function runtimeTlsSecretData(caPem: string, client?: CertAndKey): Record<string, string> {
  const b64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64');
  return {
    'ca.crt': b64(caPem),
    ...(client === undefined ? {} : { 'client.crt': b64(client.certPem), 'client.key': b64(client.keyPem) }),
  };
}
