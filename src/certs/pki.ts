/**
 * The certificates of self-managed mode: a CA that lives in the cluster Secret, and serving certificates it
 * signs for the webhook Service. Keys come from node:crypto (native, async, off the event loop); node-forge
 * only assembles and signs the certificates, which node:crypto cannot do. RSA 2048 because forge signs RSA
 * only, and kube-apiserver (Go) and every TLS client accept it.
 *
 * The local self-signed pair of `npm start` (server/tls/self-signed.ts) is made with the same functions.
 */
import { X509Certificate, createPrivateKey, generateKeyPair, randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import { promisify } from 'node:util';
import type Forge from 'node-forge';

const generateKeyPairAsync = promisify(generateKeyPair);

/**
 * node-forge (megabytes of RSS) is loaded when a certificate has to be made, not when one is only read, so a
 * `serve` that reuses its certificate never loads it.
 */
async function loadForge(): Promise<typeof Forge> {
  return (await import('node-forge')).default;
}

export const DAY_MS = 24 * 60 * 60 * 1000;
/** Backdated so that a client whose clock is a little behind accepts a certificate made a moment ago. */
const BACKDATE_MS = 5 * 60 * 1000;

export interface KeyPairPem {
  certPem: string;
  keyPem: string;
}

/** A certificate with its key, parsed once and checked to belong together. */
export interface CertifiedKey extends KeyPairPem {
  cert: X509Certificate;
}

/** The names a serving certificate must cover: DNS names and IP addresses, kept apart as X.509 keeps them. */
export interface SubjectNames {
  commonName: string;
  dnsNames: readonly string[];
  ipAddresses: readonly string[];
}

/**
 * The four names a client inside the cluster may use for `<service>` in `<namespace>`, then the extra ones
 * (an IP literal becomes an IP SAN, anything else a DNS SAN). Duplicates are dropped, order is kept.
 */
export function serviceSubjectNames(
  service: string,
  namespace: string,
  extraSans: readonly string[] = [],
): SubjectNames {
  const dns = [
    service,
    `${service}.${namespace}`,
    `${service}.${namespace}.svc`,
    `${service}.${namespace}.svc.cluster.local`,
  ];
  const ips: string[] = [];
  for (const raw of extraSans) {
    const san = raw.trim();
    if (san === '') continue;
    if (isIP(san) !== 0) ips.push(san);
    else dns.push(san);
  }
  return { commonName: `${service}.${namespace}.svc`, dnsNames: [...new Set(dns)], ipAddresses: [...new Set(ips)] };
}

/** Parses a certificate and its key; undefined when either is not PEM or they do not match. */
export function certifiedKey(certPem: string, keyPem: string): CertifiedKey | undefined {
  try {
    const cert = new X509Certificate(certPem);
    return cert.checkPrivateKey(createPrivateKey(keyPem)) ? { certPem, keyPem, cert } : undefined;
  } catch {
    // Not PEM, or a key type X509Certificate cannot compare: either way not a usable pair.
    return undefined;
  }
}

export function parseCertificate(pem: string): X509Certificate | undefined {
  try {
    return new X509Certificate(pem);
  } catch {
    // A value that is not a certificate is treated as absent by the callers.
    return undefined;
  }
}

export function notAfter(cert: X509Certificate): Date {
  return new Date(cert.validTo);
}

/** Signed by `issuer` (names and signature both), so a client trusting the issuer accepts it. */
export function issuedBy(cert: X509Certificate, issuer: X509Certificate): boolean {
  return cert.checkIssued(issuer) && cert.verify(issuer.publicKey);
}

export function coversNames(cert: X509Certificate, names: SubjectNames): boolean {
  // Wildcards are never issued here, so an exact match is what coverage means.
  const options = { wildcards: false, subject: 'never' as const };
  return (
    names.dnsNames.every((name) => cert.checkHost(name, options) !== undefined) &&
    names.ipAddresses.every((ip) => cert.checkIP(ip) !== undefined)
  );
}

export async function createCa(now: Date, validityDays: number): Promise<CertifiedKey> {
  const forge = await loadForge();
  const { publicKeyPem, privateKeyPem } = await newRsaKey();
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(publicKeyPem);
  cert.serialNumber = serialNumber();
  setValidity(cert, now, new Date(now.getTime() + validityDays * DAY_MS));
  // A distinct subject per CA: while the old and the new CA are trusted side by side, a verifier that looks
  // issuers up by name finds exactly one candidate. forge encodes the name as a PrintableString, whose
  // alphabet has no '@' or '_': Go's x509 (kube-apiserver) refuses a certificate that breaks it.
  const name = [
    {
      name: 'commonName',
      value: `sandbox-injector-ca-${Math.floor(now.getTime() / 1000)}-${randomBytes(3).toString('hex')}`,
    },
  ];
  cert.setSubject(name);
  cert.setIssuer(name);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, pathLenConstraint: 0, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  cert.sign(forge.pki.privateKeyFromPem(privateKeyPem), forge.md.sha256.create());
  return signedPair(forge.pki.certificateToPem(cert), privateKeyPem);
}

/** A serving certificate for `names`, never outliving the CA that signs it. */
export async function issueServing(
  ca: CertifiedKey,
  names: SubjectNames,
  now: Date,
  validityDays: number,
): Promise<CertifiedKey> {
  const forge = await loadForge();
  const { publicKeyPem, privateKeyPem } = await newRsaKey();
  const caCert = forge.pki.certificateFromPem(ca.certPem);
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(publicKeyPem);
  cert.serialNumber = serialNumber();
  const wanted = now.getTime() + validityDays * DAY_MS;
  setValidity(cert, now, new Date(Math.min(wanted, notAfter(ca.cert).getTime())));
  cert.setSubject([{ name: 'commonName', value: names.commonName }]);
  cert.setIssuer(caCert.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false, critical: true },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true },
    {
      name: 'subjectAltName',
      altNames: [
        ...names.dnsNames.map((value) => ({ type: 2, value })),
        ...names.ipAddresses.map((ip) => ({ type: 7, ip })),
      ],
    },
    { name: 'subjectKeyIdentifier' },
    { name: 'authorityKeyIdentifier', keyIdentifier: caCert.generateSubjectKeyIdentifier().getBytes() },
  ]);
  cert.sign(forge.pki.privateKeyFromPem(ca.keyPem), forge.md.sha256.create());
  return signedPair(forge.pki.certificateToPem(cert), privateKeyPem);
}

function signedPair(forgePem: string, keyPem: string): CertifiedKey {
  // forge writes CRLF line ends; LF is what every other PEM here has, so equal certificates compare equal.
  const pair = certifiedKey(forgePem.replace(/\r\n/g, '\n'), keyPem);
  // forge just signed this certificate for this key; a mismatch would be a bug here, not bad input.
  if (pair === undefined) throw new Error('internal error: a freshly signed certificate does not match its key');
  return pair;
}

async function newRsaKey(): Promise<{ publicKeyPem: string; privateKeyPem: string }> {
  const { publicKey, privateKey } = await generateKeyPairAsync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    // PKCS#1 ("RSA PRIVATE KEY"): the form node-forge signs with, and one every consumer of tls.key reads.
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
  });
  return { publicKeyPem: publicKey, privateKeyPem: privateKey };
}

function serialNumber(): string {
  const bytes = randomBytes(16);
  // The serial is a positive DER INTEGER (Go's x509 refuses negative ones): keep the top bit clear.
  bytes[0] = (bytes[0] ?? 0) & 0x7f;
  return bytes.toString('hex');
}

function setValidity(cert: Forge.pki.Certificate, now: Date, until: Date): void {
  cert.validity.notBefore = new Date(now.getTime() - BACKDATE_MS);
  cert.validity.notAfter = until;
}
