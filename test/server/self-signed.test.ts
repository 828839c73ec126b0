/** The zero-configuration certificate: made once, trusted through ca.crt, reused, renewed near expiry. */
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureSelfSignedCertificates, selfSignedFiles } from '../../src/server/tls/self-signed.js';
import { temporaryDirectory } from './support/pki.js';

const DAY = 86_400_000;
let root: string;
let removeDir: () => Promise<void>;
let counter = 0;

beforeAll(async () => {
  const { dir, remove } = await temporaryDirectory('self-signed');
  root = dir;
  removeDir = remove;
});
afterAll(() => removeDir());

const freshDir = (): string => `${root}/certs-${(counter += 1)}`;
const cert = async (path: string): Promise<X509Certificate> => new X509Certificate(await readFile(path));

describe('ensureSelfSignedCertificates', () => {
  it('makes a CA and a localhost serving pair the CA vouches for', async () => {
    const dir = freshDir();
    const { files, outcome } = await ensureSelfSignedCertificates(dir);
    expect(outcome).toBe('created');
    expect(files).toEqual(selfSignedFiles(dir));
    expect(files.certFile).toBe(`${dir}/tls.crt`);

    const ca = await cert(files.caCertFile);
    const serving = await cert(files.certFile);
    expect(ca.ca).toBe(true);
    expect(serving.ca).toBe(false);
    expect(serving.checkIssued(ca)).toBe(true);
    expect(serving.verify(ca.publicKey)).toBe(true);
    expect(serving.checkHost('localhost')).toBe('localhost');
    expect(serving.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(serving.checkIP('::1')).toBe('::1');
    expect(serving.keyUsage).toContain('1.3.6.1.5.5.7.3.1'); // serverAuth
    expect(serving.checkPrivateKey(createPrivateKey(await readFile(files.keyFile)))).toBe(true);
    expect((await stat(files.keyFile)).mode & 0o777).toBe(0o600);
    expect((await stat(files.caKeyFile)).mode & 0o777).toBe(0o600);
  });

  it('reuses what it made', async () => {
    const dir = freshDir();
    const { files } = await ensureSelfSignedCertificates(dir);
    const before = await readFile(files.certFile);
    expect((await ensureSelfSignedCertificates(dir)).outcome).toBe('reused');
    expect(await readFile(files.certFile)).toEqual(before);
  });

  it('renews the serving certificate near its expiry, under the same CA', async () => {
    const dir = freshDir();
    const { files } = await ensureSelfSignedCertificates(dir);
    const caBefore = await readFile(files.caCertFile);
    const servingBefore = await readFile(files.certFile);

    const { outcome } = await ensureSelfSignedCertificates(dir, new Date(Date.now() + 340 * DAY));
    expect(outcome).toBe('renewed-serving');
    expect(await readFile(files.caCertFile)).toEqual(caBefore);
    expect(await readFile(files.certFile)).not.toEqual(servingBefore);
    expect((await cert(files.certFile)).checkIssued(await cert(files.caCertFile))).toBe(true);
  });

  it('makes a new CA when the old one is near its end', async () => {
    const dir = freshDir();
    const { files } = await ensureSelfSignedCertificates(dir);
    const caBefore = await readFile(files.caCertFile);
    expect((await ensureSelfSignedCertificates(dir, new Date(Date.now() + 3640 * DAY))).outcome).toBe('created');
    expect(await readFile(files.caCertFile)).not.toEqual(caBefore);
  });

  it('replaces a serving key that does not match its certificate', async () => {
    const dir = freshDir();
    const { files } = await ensureSelfSignedCertificates(dir);
    await writeFile(files.keyFile, 'not a key');
    expect((await ensureSelfSignedCertificates(dir)).outcome).toBe('renewed-serving');
    const serving = await cert(files.certFile);
    expect(serving.checkPrivateKey(createPrivateKey(await readFile(files.keyFile)))).toBe(true);
  });
});
