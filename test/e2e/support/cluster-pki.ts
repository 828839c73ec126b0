// The cluster's certificates and keys, made by the test PKI maker and written
// to `<dir>/pki` for kube-apiserver to read.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  createCa,
  createClientCert,
  createServingCert,
  rsaKeyPair,
  type CertAndKey,
} from '../../server/support/pki.js';

export interface ClusterPki {
  /** Signs the apiserver's serving certificate and every client certificate it accepts. */
  ca: CertAndKey;
  /** User e2e-admin in group system:masters. */
  admin: CertAndKey;
  caFile: string;
  servingCertFile: string;
  servingKeyFile: string;
  /** The service-account key pair: the apiserver signs tokens with the private key and checks them with the public one. */
  saPublicKeyFile: string;
  saPrivateKeyFile: string;
}

export function writeClusterPki(dir: string): ClusterPki {
  const pki = path.join(dir, 'pki');
  mkdirSync(pki);
  const ca = createCa('sandbox-injector-e2e-ca');
  const serving = createServingCert(ca, {
    commonName: 'kube-apiserver',
    dnsNames: ['localhost', 'kubernetes', 'kubernetes.default', 'kubernetes.default.svc'],
    ipAddresses: ['127.0.0.1'],
  });
  const admin = createClientCert(ca, 'e2e-admin', ['system:masters']);
  const sa = rsaKeyPair();
  const file = (name: string, content: string): string => {
    const p = path.join(pki, name);
    writeFileSync(p, content, { mode: 0o600 });
    return p;
  };
  return {
    ca,
    admin,
    caFile: file('ca.crt', ca.certPem),
    servingCertFile: file('apiserver.crt', serving.certPem),
    servingKeyFile: file('apiserver.key', serving.keyPem),
    saPublicKeyFile: file('sa.pub', sa.publicKeyPem),
    saPrivateKeyFile: file('sa.key', sa.privateKeyPem),
  };
}
