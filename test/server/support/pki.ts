/**
 * Certificates for the transport tests, made fresh in a temporary directory per suite. Serving pairs come
 * from the product's own self-signed maker; client certificates (which it never makes) are issued here.
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import forge from 'node-forge';
import { ensureSelfSignedCertificates, type SelfSignedFiles } from '../../../src/server/tls/self-signed.js';

export async function temporaryDirectory(prefix: string): Promise<{ dir: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), `si-${prefix}-`));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

export async function servingPki(dir: string): Promise<SelfSignedFiles> {
  return (await ensureSelfSignedCertificates(dir)).files;
}

export interface ClientPki {
  caFile: string;
  certPem: string;
  keyPem: string;
  /** Signed by a CA the server does not trust. */
  strangerCertPem: string;
  strangerKeyPem: string;
}

export async function clientPki(dir: string): Promise<ClientPki> {
  const ca = selfSignedCa('test client CA');
  const stranger = selfSignedCa('stranger CA');
  const client = clientCertificate(ca, 'admission-client');
  const strangerClient = clientCertificate(stranger, 'stranger');
  const caFile = join(dir, 'client-ca.crt');
  await writeFile(caFile, ca.certPem);
  return {
    caFile,
    certPem: client.certPem,
    keyPem: client.keyPem,
    strangerCertPem: strangerClient.certPem,
    strangerKeyPem: strangerClient.keyPem,
  };
}

interface Issued {
  cert: forge.pki.Certificate;
  certPem: string;
  keyPem: string;
  key: forge.pki.rsa.PrivateKey;
}

function rsaKey(): { publicKey: forge.pki.rsa.PublicKey; privateKey: forge.pki.rsa.PrivateKey; keyPem: string } {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
  });
  return {
    publicKey: forge.pki.publicKeyFromPem(publicKey),
    privateKey: forge.pki.privateKeyFromPem(privateKey),
    keyPem: privateKey,
  };
}

let serial = 1;
function base(commonName: string, publicKey: forge.pki.PublicKey): forge.pki.Certificate {
  const cert = forge.pki.createCertificate();
  cert.publicKey = publicKey;
  serial += 1;
  cert.serialNumber = serial.toString(16).padStart(4, '0');
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + 86_400_000);
  cert.setSubject([{ name: 'commonName', value: commonName }]);
  return cert;
}

function selfSignedCa(commonName: string): Issued {
  const { publicKey, privateKey, keyPem } = rsaKey();
  const cert = base(commonName, publicKey);
  cert.setIssuer(cert.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, critical: true },
  ]);
  cert.sign(privateKey, forge.md.sha256.create());
  return { cert, certPem: forge.pki.certificateToPem(cert), keyPem, key: privateKey };
}

function clientCertificate(ca: Issued, commonName: string): { certPem: string; keyPem: string } {
  const { publicKey, keyPem } = rsaKey();
  const cert = base(commonName, publicKey);
  cert.setIssuer(ca.cert.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
    { name: 'extKeyUsage', clientAuth: true },
  ]);
  cert.sign(ca.key, forge.md.sha256.create());
  return { certPem: forge.pki.certificateToPem(cert), keyPem };
}
