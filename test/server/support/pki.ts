/**
 * The one maker of test certificates. The transport tests use it for their client certificates (which the
 * product never makes; serving pairs come from the product's own self-signed maker), and the e2e suite for
 * its cluster (a CA, kube-apiserver's serving certificate, the admin and other users' client certificates)
 * and for the webhook processes it starts. Keys come from node:crypto (native, fast); node-forge only
 * assembles and signs the certificates. Everything is synchronous, so a test can make a certificate inline.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
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
  const ca = createCa('test client CA');
  const stranger = createCa('stranger CA');
  const client = createClientCert(ca, 'admission-client', []);
  const strangerClient = createClientCert(stranger, 'stranger', []);
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

export interface KeyPairPem {
  privateKeyPem: string;
  publicKeyPem: string;
}

export interface CertAndKey {
  certPem: string;
  keyPem: string;
}

/** RSA key pair from node:crypto; private key as PKCS#8 PEM, public key as SPKI PEM. */
export function rsaKeyPair(bits = 2048): KeyPairPem {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', {
    modulusLength: bits,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  return { privateKeyPem: privateKey, publicKeyPem: publicKey };
}

type Subject = forge.pki.CertificateField[];

function signCert(
  subject: Subject,
  publicKeyPem: string,
  extensions: object[],
  issuer: { subject: Subject; keyPem: string },
  validDays: number,
): string {
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(publicKeyPem);
  // Leading 0x01 keeps the serial positive (Go's x509 rejects negative ones).
  cert.serialNumber = '01' + randomBytes(15).toString('hex');
  const now = Date.now();
  cert.validity.notBefore = new Date(now - 60 * 60 * 1000);
  cert.validity.notAfter = new Date(now + validDays * 24 * 60 * 60 * 1000);
  cert.setSubject(subject);
  cert.setIssuer(issuer.subject);
  cert.setExtensions(extensions);
  cert.sign(forge.pki.privateKeyFromPem(issuer.keyPem), forge.md.sha256.create());
  return forge.pki.certificateToPem(cert);
}

function subjectOf(certPem: string): Subject {
  return forge.pki.certificateFromPem(certPem).subject.attributes;
}

export function createCa(commonName: string, validDays = 7): CertAndKey {
  const keys = rsaKeyPair();
  const subject: Subject = [{ name: 'commonName', value: commonName }];
  const certPem = signCert(
    subject,
    keys.publicKeyPem,
    [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
      { name: 'subjectKeyIdentifier' },
    ],
    { subject, keyPem: keys.privateKeyPem },
    validDays,
  );
  return { certPem, keyPem: keys.privateKeyPem };
}

export interface ServingCertOptions {
  commonName: string;
  dnsNames: string[];
  ipAddresses: string[];
  validDays?: number;
}

/** A TLS server certificate signed by `ca` (e.g. kube-apiserver's, or a webhook's under test). */
export function createServingCert(ca: CertAndKey, opts: ServingCertOptions): CertAndKey {
  const keys = rsaKeyPair();
  const altNames = [
    ...opts.dnsNames.map((value) => ({ type: 2, value })),
    ...opts.ipAddresses.map((ip) => ({ type: 7, ip })),
  ];
  const certPem = signCert(
    [{ name: 'commonName', value: opts.commonName }],
    keys.publicKeyPem,
    [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames },
    ],
    { subject: subjectOf(ca.certPem), keyPem: ca.keyPem },
    opts.validDays ?? 7,
  );
  return { certPem, keyPem: keys.privateKeyPem };
}

/** A client certificate: Kubernetes reads CN as the user and each O as a group. */
export function createClientCert(ca: CertAndKey, user: string, groups: string[], validDays = 7): CertAndKey {
  const keys = rsaKeyPair();
  const certPem = signCert(
    [{ name: 'commonName', value: user }, ...groups.map((value) => ({ name: 'organizationName', value }))],
    keys.publicKeyPem,
    [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', clientAuth: true },
    ],
    { subject: subjectOf(ca.certPem), keyPem: ca.keyPem },
    validDays,
  );
  return { certPem, keyPem: keys.privateKeyPem };
}
