/**
 * The zero-configuration certificate for `npm start`: a local CA and a serving certificate for localhost,
 * made on first start and reused afterwards, so a client can trust `ca.crt` once. Nothing here is used when
 * certificate files are given, and nothing is ever committed (the directory is gitignored).
 *
 * The CA key is kept next to the CA so that renewing the serving certificate does not change what clients
 * must trust. Keys and certificates are made by certs/pki.ts, as in self-managed mode; it loads node-forge
 * only when something has to be made, so a start that reuses the pair stays light.
 */
import { randomBytes, type X509Certificate } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  DAY_MS,
  certifiedKey,
  coversNames,
  createCa,
  issueServing,
  issuedBy,
  notAfter,
  type CertifiedKey,
  type SubjectNames,
} from '../../certs/pki.js';

export interface SelfSignedFiles {
  caCertFile: string;
  caKeyFile: string;
  certFile: string;
  keyFile: string;
}

export type SelfSignedOutcome = 'reused' | 'renewed-serving' | 'created';

const CA_LIFETIME_DAYS = 3650;
const SERVING_LIFETIME_DAYS = 365;
/** A certificate this close to its end is replaced at start, so a long-running dev server does not expire. */
const RENEW_BEFORE_DAYS = 30;
/** This machine, by name and by both loopback addresses. */
const SELF_SIGNED_NAMES: SubjectNames = {
  commonName: 'localhost',
  dnsNames: ['localhost'],
  ipAddresses: ['127.0.0.1', '::1'],
};

export function selfSignedFiles(dir: string): SelfSignedFiles {
  return {
    caCertFile: join(dir, 'ca.crt'),
    caKeyFile: join(dir, 'ca.key'),
    certFile: join(dir, 'tls.crt'),
    keyFile: join(dir, 'tls.key'),
  };
}

export async function ensureSelfSignedCertificates(
  dir: string,
  now: Date = new Date(),
): Promise<{ files: SelfSignedFiles; outcome: SelfSignedOutcome }> {
  const files = selfSignedFiles(dir);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const renewBy = new Date(now.getTime() + RENEW_BEFORE_DAYS * DAY_MS);

  const existingCa = await readPair(files.caCertFile, files.caKeyFile);
  const ca = existingCa !== undefined && lastsBeyond(existingCa.cert, renewBy) ? existingCa : undefined;
  const existingServing = ca === undefined ? undefined : await readPair(files.certFile, files.keyFile);
  if (ca !== undefined && existingServing !== undefined && servingStillGood(existingServing, ca, renewBy)) {
    return { files, outcome: 'reused' };
  }

  const usableCa = ca ?? (await createCa(now, CA_LIFETIME_DAYS));
  const serving = await issueServing(usableCa, SELF_SIGNED_NAMES, now, SERVING_LIFETIME_DAYS);
  if (ca === undefined) {
    await writeAtomically(files.caKeyFile, usableCa.keyPem, 0o600);
    await writeAtomically(files.caCertFile, usableCa.certPem, 0o644);
  }
  // Key before certificate: a reader that sees the new certificate finds its key already in place.
  await writeAtomically(files.keyFile, serving.keyPem, 0o600);
  await writeAtomically(files.certFile, serving.certPem, 0o644);
  return { files, outcome: ca === undefined ? 'created' : 'renewed-serving' };
}

async function readPair(certFile: string, keyFile: string): Promise<CertifiedKey | undefined> {
  try {
    const [certPem, keyPem] = await Promise.all([readFile(certFile, 'utf8'), readFile(keyFile, 'utf8')]);
    return certifiedKey(certPem, keyPem);
  } catch {
    // Missing or unreadable, like a pair that is not PEM or does not match: all mean "make a new one".
    return undefined;
  }
}

function lastsBeyond(cert: X509Certificate, when: Date): boolean {
  return notAfter(cert).getTime() > when.getTime();
}

function servingStillGood(serving: CertifiedKey, ca: CertifiedKey, renewBy: Date): boolean {
  return (
    lastsBeyond(serving.cert, renewBy) &&
    issuedBy(serving.cert, ca.cert) &&
    coversNames(serving.cert, SELF_SIGNED_NAMES)
  );
}

/** Write-then-rename, so a server starting concurrently never reads half a file. */
async function writeAtomically(path: string, content: string, mode: number): Promise<void> {
  const temporary = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  await writeFile(temporary, content, { mode });
  await rename(temporary, path);
}
