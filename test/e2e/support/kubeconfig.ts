// Kubeconfig files for the e2e cluster: one cluster `e2e` (CA embedded), one
// user, one context `e2e` in namespace `default`.
import { writeFileSync } from 'node:fs';
import { stringify as toYaml } from 'yaml';
import type { CertAndKey } from '../../server/support/pki.js';

const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');

/** The kubeconfig `user` entry for a client certificate, embedded. */
export function clientCertUser(cert: CertAndKey): Record<string, string> {
  return { 'client-certificate-data': b64(cert.certPem), 'client-key-data': b64(cert.keyPem) };
}

/** Writes a kubeconfig (mode 0600: it holds a key or a token) whose current context is `e2e`. */
export function writeKubeconfig(
  file: string,
  server: string,
  caPem: string,
  userName: string,
  user: Record<string, string>,
): void {
  writeFileSync(
    file,
    toYaml({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'e2e', cluster: { server, 'certificate-authority-data': b64(caPem) } }],
      users: [{ name: userName, user }],
      contexts: [{ name: 'e2e', context: { cluster: 'e2e', user: userName, namespace: 'default' } }],
      'current-context': 'e2e',
    }),
    { mode: 0o600 },
  );
}
