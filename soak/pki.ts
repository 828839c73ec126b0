/**
 * A CA and serving pairs for the rotation phase, made by the tests' one PKI maker
 * (test/server/support/pki.ts). Each rotation gets a new key as well as a new certificate, as cert-manager's
 * default rotation policy does.
 */
import { X509Certificate } from 'node:crypto';
import { createCa, createServingCert, type CertAndKey } from '../test/server/support/pki.js';

export interface ServingPair {
  certPem: string;
  keyPem: string;
  fingerprint: string;
}

export class SoakPki {
  private readonly ca: CertAndKey = createCa('soak CA');

  get caPem(): string {
    return this.ca.certPem;
  }

  /** The n-th serving pair for localhost and 127.0.0.1, signed by this CA. */
  serving(n: number): ServingPair {
    const { certPem, keyPem } = createServingCert(this.ca, {
      commonName: `soak serving ${n}`,
      dnsNames: ['localhost'],
      ipAddresses: ['127.0.0.1'],
    });
    return { certPem, keyPem, fingerprint: new X509Certificate(certPem).fingerprint256 };
  }

  /** A pair whose key does not match its certificate: the server must refuse it and keep what it serves. */
  mismatched(n: number): ServingPair {
    return { ...this.serving(n), keyPem: this.serving(n + 1).keyPem };
  }
}
