/**
 * The zero-configuration certificate for `npm start`: a local CA and a serving certificate for localhost,
 * made on first start and reused afterwards, so a client can trust `ca.crt` once. Nothing here is used when
 * certificate files are given, and nothing is ever committed (the directory is gitignored).
 *
 * The CA key is kept next to the CA so that renewing the serving certificate does not change what clients
 * must trust. Keys come from node:crypto (native, async); node-forge only assembles and signs certificates.
 */
import { X509Certificate, createPrivateKey, generateKeyPair, randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type Forge from 'node-forge';

const generateKeyPairAsync = promisify(generateKeyPair);

/** node-forge (~11 MiB of RSS) is only loaded when a certificate has to be made, not on every start. */
async function loadForge(): Promise<typeof Forge> {
  return (await import('node-forge')).default;
}

export interface SelfSignedFiles {
  caCertFile: string;
  caKeyFile: string;
  certFile: string;
  keyFile: string;
}

export type SelfSignedOutcome = 'reused' | 'renewed-serving' | 'created';

const DAY_MS = 24 * 60 * 60 * 1000;
const CA_LIFETIME_DAYS = 3650;
const SERVING_LIFETIME_DAYS = 365;
/** A certificate this close to its end is replaced at start, so a long-running dev server does not expire. */
const RENEW_BEFORE_DAYS = 30;
/** Backdated so a client whose clock is slightly behind accepts a certificate made a moment ago. */
const BACKDATE_MS = 5 * 60 * 1000;
export const SELF_SIGNED_HOSTS = { dns: ['localhost'], ips: ['127.0.0.1', '::1'] } as const;

export function selfSignedFiles(dir: string): SelfSignedFiles {
  return {
    caCertFile: join(dir, 'ca.crt'),
    caKeyFile: join(dir, 'ca.key'),
    certFile: join(dir, 'tls.crt'),
    keyFile: join(dir, 'tls.key'),
  };
}

interface Pair {
  certPem: string;
  keyPem: string;
  cert: X509Certificate;
}

export async function ensureSelfSignedCertificates(
  dir: string,
  now: Date = new Date(),
): Promise<{ files: SelfSignedFiles; outcome: SelfSignedOutcome }> {
  const files = selfSignedFiles(dir);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const renewBy = new Date(now.getTime() + RENEW_BEFORE_DAYS * DAY_MS);

  const existingCa = await readPair(files.caCertFile, files.caKeyFile);
  const ca = existingCa !== undefined && lastsBeyond(existingCa, renewBy) ? existingCa : undefined;
  const existingServing = ca === undefined ? undefined : await readPair(files.certFile, files.keyFile);
  if (ca !== undefined && existingServing !== undefined && servingStillGood(existingServing, ca, renewBy)) {
    return { files, outcome: 'reused' };
  }

  const usableCa = ca ?? (await createCa(now));
  const serving = await issueServing(usableCa, now);
  if (ca === undefined) {
    await writeAtomically(files.caKeyFile, usableCa.keyPem, 0o600);
    await writeAtomically(files.caCertFile, usableCa.certPem, 0o644);
  }
  // Key before certificate: a reader that sees the new certificate finds its key already in place.
  await writeAtomically(files.keyFile, serving.keyPem, 0o600);
  await writeAtomically(files.certFile, serving.certPem, 0o644);
  return { files, outcome: ca === undefined ? 'created' : 'renewed-serving' };
}

async function readPair(certFile: string, keyFile: string): Promise<Pair | undefined> {
  try {
    const [certPem, keyPem] = await Promise.all([readFile(certFile, 'utf8'), readFile(keyFile, 'utf8')]);
    const cert = new X509Certificate(certPem);
    return cert.checkPrivateKey(createPrivateKey(keyPem)) ? { certPem, keyPem, cert } : undefined;
  } catch {
    // Missing, unreadable or not PEM: all mean "make a new one".
    return undefined;
  }
}

function lastsBeyond(pair: Pair, when: Date): boolean {
  return new Date(pair.cert.validTo).getTime() > when.getTime();
}

function servingStillGood(serving: Pair, ca: Pair, renewBy: Date): boolean {
  return (
    lastsBeyond(serving, renewBy) &&
    serving.cert.checkIssued(ca.cert) &&
    serving.cert.verify(ca.cert.publicKey) &&
    SELF_SIGNED_HOSTS.dns.every((host) => serving.cert.checkHost(host) !== undefined) &&
    SELF_SIGNED_HOSTS.ips.every((ip) => serving.cert.checkIP(ip) !== undefined)
  );
}

async function newRsaKey(): Promise<{ publicKeyPem: string; privateKeyPem: string }> {
  const { publicKey, privateKey } = await generateKeyPairAsync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    // PKCS#1 because that is the private-key form node-forge reads for signing.
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
  });
  return { publicKeyPem: publicKey, privateKeyPem: privateKey };
}

function serialNumber(): string {
  const bytes = randomBytes(16);
  // The serial is a positive DER INTEGER: keep the top bit clear.
  bytes[0] = (bytes[0] ?? 0) & 0x7f;
  return bytes.toString('hex');
}

function validity(cert: Forge.pki.Certificate, now: Date, days: number): void {
  cert.validity.notBefore = new Date(now.getTime() - BACKDATE_MS);
  cert.validity.notAfter = new Date(now.getTime() + days * DAY_MS);
}

async function createCa(now: Date): Promise<Pair> {
  const forge = await loadForge();
  const { publicKeyPem, privateKeyPem } = await newRsaKey();
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(publicKeyPem);
  cert.serialNumber = serialNumber();
  validity(cert, now, CA_LIFETIME_DAYS);
  const name = [{ name: 'commonName', value: 'sandbox-injector local CA' }];
  cert.setSubject(name);
  cert.setIssuer(name);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  cert.sign(forge.pki.privateKeyFromPem(privateKeyPem), forge.md.sha256.create());
  const certPem = forge.pki.certificateToPem(cert);
  return { certPem, keyPem: privateKeyPem, cert: new X509Certificate(certPem) };
}

async function issueServing(ca: Pair, now: Date): Promise<Pair> {
  const forge = await loadForge();
  const { publicKeyPem, privateKeyPem } = await newRsaKey();
  const caCert = forge.pki.certificateFromPem(ca.certPem);
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(publicKeyPem);
  cert.serialNumber = serialNumber();
  validity(cert, now, SERVING_LIFETIME_DAYS);
  cert.setSubject([{ name: 'commonName', value: 'localhost' }]);
  cert.setIssuer(caCert.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true },
    {
      name: 'subjectAltName',
      altNames: [
        ...SELF_SIGNED_HOSTS.dns.map((value) => ({ type: 2, value })),
        ...SELF_SIGNED_HOSTS.ips.map((ip) => ({ type: 7, ip })),
      ],
    },
    { name: 'subjectKeyIdentifier' },
    { name: 'authorityKeyIdentifier', keyIdentifier: caCert.generateSubjectKeyIdentifier().getBytes() },
  ]);
  cert.sign(forge.pki.privateKeyFromPem(ca.keyPem), forge.md.sha256.create());
  const certPem = forge.pki.certificateToPem(cert);
  return { certPem, keyPem: privateKeyPem, cert: new X509Certificate(certPem) };
}

/** Write-then-rename, so a server starting concurrently never reads half a file. */
async function writeAtomically(path: string, content: string, mode: number): Promise<void> {
  const temporary = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  await writeFile(temporary, content, { mode });
  await rename(temporary, path);
}
