/**
 * The serving certificate, its key and the optional client CA, read together and checked together: a
 * certificate is only ever served with the key that matches it, so a half-written pair is refused here.
 */
import { readFile as fsReadFile } from 'node:fs/promises';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import type { SecureContextOptions } from 'node:tls';
import type { ServerOptions as HttpsServerOptions } from 'node:https';
import { DEFAULT_TLS_POLICY, type TlsPolicy } from './policy.js';
import { STARTUP_ERRORS, type FailureSpec } from '../../errors/index.js';
import { errorMessage } from '../../errors/error-message.js';

export interface TlsFiles {
  certFile: string;
  keyFile: string;
  /** When set, clients must present a certificate issued by this CA. */
  clientCaFile?: string;
}

export interface TlsMaterial {
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly clientCa: Buffer | undefined;
  /** Of the leaf (first) certificate in `cert`. */
  readonly notAfter: Date;
  readonly subject: string;
  readonly fingerprint256: string;
}

export type ReadFile = (path: string) => Promise<Buffer>;

/** TLS 1.0 and 1.1 are deprecated (RFC 8996); the Kubernetes API server speaks 1.2 and 1.3. */
export const MIN_TLS_VERSION = 'TLSv1.2';

export async function loadTlsMaterial(files: TlsFiles, readFile: ReadFile = fsReadFile): Promise<TlsMaterial> {
  const [cert, key, clientCa] = await Promise.all([
    readOrThrow(readFile, files.certFile),
    readOrThrow(readFile, files.keyFile),
    files.clientCaFile === undefined ? undefined : readOrThrow(readFile, files.clientCaFile),
  ]);

  const leaf = parse(
    STARTUP_ERRORS.tlsCertificateInvalid,
    `certificate ${files.certFile}`,
    () => new X509Certificate(cert),
  );
  const privateKey = parse(STARTUP_ERRORS.tlsKeyInvalid, `private key ${files.keyFile}`, () => createPrivateKey(key));
  if (!leaf.checkPrivateKey(privateKey)) {
    throw new STARTUP_ERRORS.tlsKeyMismatch.Error(files.keyFile, files.certFile);
  }
  if (clientCa !== undefined && files.clientCaFile !== undefined) {
    const where = `client CA ${files.clientCaFile}`;
    parse(STARTUP_ERRORS.tlsClientCaInvalid, where, () => new X509Certificate(clientCa));
  }

  return {
    cert,
    key,
    clientCa,
    notAfter: new Date(leaf.validTo),
    subject: leaf.subject,
    fingerprint256: leaf.fingerprint256,
  };
}

async function readOrThrow(readFile: ReadFile, path: string): Promise<Buffer> {
  try {
    return await readFile(path);
  } catch (error) {
    throw new STARTUP_ERRORS.tlsUnreadable.Error(path, errorMessage(error));
  }
}

function parse<T>(row: FailureSpec<[what: string, reason: string]>, what: string, build: () => T): T {
  try {
    return build();
  } catch (error) {
    throw new row.Error(what, errorMessage(error));
  }
}

export function sameMaterial(a: TlsMaterial, b: TlsMaterial): boolean {
  return a.cert.equals(b.cert) && a.key.equals(b.key) && sameOptionalBuffer(a.clientCa, b.clientCa);
}

function sameOptionalBuffer(a: Buffer | undefined, b: Buffer | undefined): boolean {
  return a === undefined || b === undefined ? a === b : a.equals(b);
}

/**
 * What `server.setSecureContext()` takes on reload: everything that lives in the context, not the server.
 * The policy (versions, ciphers, no renegotiation) lives in the context too, so a reload must carry it or
 * the new context would fall back to Node's defaults.
 */
export function secureContextOptions(
  material: TlsMaterial,
  policy: TlsPolicy = DEFAULT_TLS_POLICY,
): SecureContextOptions {
  const options: SecureContextOptions = {
    cert: material.cert,
    key: material.key,
    minVersion: policy.minVersion,
    ciphers: policy.ciphers,
    secureOptions: policy.secureOptions,
  };
  if (material.clientCa !== undefined) options.ca = material.clientCa;
  return options;
}

/**
 * Options for the https server. Client-certificate checking is decided once at startup from whether a
 * client CA was configured; a reload can change the CA's contents but not switch the mode.
 */
export function httpsServerOptions(material: TlsMaterial, policy: TlsPolicy = DEFAULT_TLS_POLICY): HttpsServerOptions {
  const requireClientCert = material.clientCa !== undefined;
  return {
    ...secureContextOptions(material, policy),
    requestCert: requireClientCert,
    rejectUnauthorized: requireClientCert,
  };
}
