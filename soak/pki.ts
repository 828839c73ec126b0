/**
 * A CA and serving pairs for the rotation phase. Keys come from node:crypto (fast, native); node-forge only
 * assembles and signs the certificates. A few keys are made once and taken in turn, so every rotation
 * changes both the certificate and the key, as cert-manager's default rotation policy does.
 */
import { generateKeyPairSync, X509Certificate } from 'node:crypto';
import forge from 'node-forge';

interface Key {
  pem: string;
  forgePrivate: forge.pki.rsa.PrivateKey;
  forgePublic: forge.pki.rsa.PublicKey;
}

export interface ServingPair {
  certPem: string;
  keyPem: string;
  fingerprint: string;
}

function rsaKey(): Key {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
  });
  return { pem: privateKey, forgePrivate: forge.pki.privateKeyFromPem(privateKey), forgePublic: forge.pki.publicKeyFromPem(publicKey) };
}

export class SoakPki {
  readonly caPem: string;
  private readonly caKey: Key;
  private readonly caCert: forge.pki.Certificate;
  private readonly keys: Key[];
  private serial = 1;

  constructor(keyCount = 4) {
    this.caKey = rsaKey();
    this.caCert = this.certificate('soak CA', this.caKey.forgePublic);
    this.caCert.setIssuer(this.caCert.subject.attributes);
    this.caCert.setExtensions([
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    ]);
    this.caCert.sign(this.caKey.forgePrivate, forge.md.sha256.create());
    this.caPem = forge.pki.certificateToPem(this.caCert);
    this.keys = Array.from({ length: keyCount }, rsaKey);
  }

  /** The n-th serving pair for localhost and 127.0.0.1, signed by this CA, with the n-th key of the pool. */
  serving(n: number): ServingPair {
    const key = this.keys[n % this.keys.length] as Key;
    const cert = this.certificate(`soak serving ${n}`, key.forgePublic);
    cert.setIssuer(this.caCert.subject.attributes);
    cert.setExtensions([
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }, { type: 7, ip: '127.0.0.1' }] },
    ]);
    cert.sign(this.caKey.forgePrivate, forge.md.sha256.create());
    const certPem = forge.pki.certificateToPem(cert);
    return { certPem, keyPem: key.pem, fingerprint: new X509Certificate(certPem).fingerprint256 };
  }

  /** A pair whose key does not match its certificate: the server must refuse it and keep what it serves. */
  mismatched(n: number): ServingPair {
    const pair = this.serving(n);
    return { ...pair, keyPem: (this.keys[(n + 1) % this.keys.length] as Key).pem };
  }

  private certificate(commonName: string, publicKey: forge.pki.rsa.PublicKey): forge.pki.Certificate {
    const cert = forge.pki.createCertificate();
    cert.publicKey = publicKey;
    this.serial += 1;
    // A leading 1 keeps DER's integer minimal and positive; a zero-padded serial is refused as bad padding.
    cert.serialNumber = (0x1000_0000 + this.serial).toString(16);
    cert.validity.notBefore = new Date(Date.now() - 60_000);
    cert.validity.notAfter = new Date(Date.now() + 7 * 86_400_000);
    cert.setSubject([{ name: 'commonName', value: commonName }]);
    return cert;
  }
}
