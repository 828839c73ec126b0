/**
 * Which TLS versions and cipher suites the webhook port speaks, named as kube-apiserver's `--tls-min-version`
 * and `--tls-cipher-suites` name them (Go's crypto/tls names), and translated to what OpenSSL takes.
 *
 * The default is kube-apiserver's own: TLS 1.2 and 1.3, and on TLS 1.2 only ECDHE key exchange (forward
 * secrecy) with AEAD ciphers. Go's list of "secure" suites also has the ECDHE CBC ones; they are refused
 * here: CBC with a separate MAC is where the practical attacks on TLS 1.2 were (padding oracles, Lucky 13).
 */
import { constants } from 'node:crypto';
import type { SecureVersion } from 'node:tls';

/** kube-apiserver's names for the versions we accept. TLS 1.0 and 1.1 are refused (RFC 8996). */
export const TLS_MIN_VERSIONS = ['VersionTLS12', 'VersionTLS13'] as const;
export type TlsMinVersionName = (typeof TLS_MIN_VERSIONS)[number];

const NODE_VERSIONS: Record<TlsMinVersionName, SecureVersion> = {
  VersionTLS12: 'TLSv1.2',
  VersionTLS13: 'TLSv1.3',
};

/** The TLS 1.2 suites we serve, IANA name (as Go and kube-apiserver spell it) to OpenSSL name. */
const TLS12_SUITES: ReadonlyMap<string, string> = new Map([
  ['TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256', 'ECDHE-ECDSA-AES128-GCM-SHA256'],
  ['TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256', 'ECDHE-RSA-AES128-GCM-SHA256'],
  ['TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384', 'ECDHE-ECDSA-AES256-GCM-SHA384'],
  ['TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384', 'ECDHE-RSA-AES256-GCM-SHA384'],
  ['TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256', 'ECDHE-ECDSA-CHACHA20-POLY1305'],
  ['TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256', 'ECDHE-RSA-CHACHA20-POLY1305'],
  // kube-apiserver still accepts these older spellings of the two above.
  ['TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305', 'ECDHE-ECDSA-CHACHA20-POLY1305'],
  ['TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305', 'ECDHE-RSA-CHACHA20-POLY1305'],
]);

/**
 * TLS 1.3 suites are all AEAD with forward secrecy. Go does not let them be configured and always offers
 * all three; kube-apiserver accepts their names in the flag anyway, and so do we, with the same effect.
 */
const TLS13_SUITES = ['TLS_AES_128_GCM_SHA256', 'TLS_AES_256_GCM_SHA384', 'TLS_CHACHA20_POLY1305_SHA256'] as const;

/** Names Go knows that we refuse, with the reason the options error gives. */
const REFUSED_SUITES: ReadonlyMap<string, string> = new Map(
  [
    'TLS_RSA_WITH_RC4_128_SHA',
    'TLS_RSA_WITH_3DES_EDE_CBC_SHA',
    'TLS_RSA_WITH_AES_128_CBC_SHA',
    'TLS_RSA_WITH_AES_256_CBC_SHA',
    'TLS_RSA_WITH_AES_128_CBC_SHA256',
    'TLS_RSA_WITH_AES_128_GCM_SHA256',
    'TLS_RSA_WITH_AES_256_GCM_SHA384',
    'TLS_ECDHE_ECDSA_WITH_RC4_128_SHA',
    'TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA',
    'TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA',
    'TLS_ECDHE_RSA_WITH_RC4_128_SHA',
    'TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA',
    'TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA',
    'TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA',
    'TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256',
    'TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256',
  ].map((name) => [name, refusalReason(name)]),
);

function refusalReason(name: string): string {
  const reasons: string[] = [];
  if (name.startsWith('TLS_RSA_')) reasons.push('static RSA key exchange (no forward secrecy)');
  if (/_RC4_|_3DES_|_CBC_/.test(name)) reasons.push('not an AEAD cipher');
  return reasons.join(', ');
}

/** kube-apiserver's default on TLS 1.2, without the CBC suites (see the top of this file). */
export const DEFAULT_TLS_CIPHER_SUITES: readonly string[] = [
  'TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256',
  'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256',
  'TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384',
  'TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384',
  'TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256',
  'TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256',
];

/** What goes into every secure context, the first and each one a certificate reload makes. */
export interface TlsPolicy {
  readonly minVersion: SecureVersion;
  /** OpenSSL cipher string: the TLS 1.2 suites, then the TLS 1.3 ones. */
  readonly ciphers: string;
  readonly secureOptions: number;
}

/** Splits the flag's comma-separated value; empty entries (a trailing comma) are dropped. */
export function splitCipherSuites(value: string): string[] {
  return value
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
}

/** One problem per name that is unknown or refused, each saying why; empty when the list is usable. */
export function cipherSuiteProblems(
  names: readonly string[],
  minVersion: TlsMinVersionName = 'VersionTLS12',
): string[] {
  const problems: string[] = [];
  for (const name of names) {
    if (TLS12_SUITES.has(name) || (TLS13_SUITES as readonly string[]).includes(name)) continue;
    const refused = REFUSED_SUITES.get(name);
    problems.push(
      refused === undefined
        ? `unknown cipher suite ${name}; allowed: ${[...TLS12_SUITES.keys(), ...TLS13_SUITES].join(', ')}`
        : `cipher suite ${name} is refused: ${refused}`,
    );
  }
  const tls12Clients = minVersion === 'VersionTLS12';
  if (problems.length === 0 && tls12Clients && names.length > 0 && !names.some((name) => TLS12_SUITES.has(name))) {
    problems.push('no TLS 1.2 cipher suite left: name at least one, or use --tls-min-version VersionTLS13');
  }
  return problems;
}

/** Throws on names `cipherSuiteProblems` refuses; the options parser reports them before this is called. */
export function tlsPolicy(
  minVersion: TlsMinVersionName,
  cipherSuites: readonly string[] = DEFAULT_TLS_CIPHER_SUITES,
): TlsPolicy {
  const problems = cipherSuiteProblems(cipherSuites, minVersion);
  if (problems.length > 0) throw new Error(problems.join('; '));
  const tls12 = [...new Set(cipherSuites.flatMap((name) => TLS12_SUITES.get(name) ?? []))];
  return {
    minVersion: NODE_VERSIONS[minVersion],
    ciphers: [...tls12, ...TLS13_SUITES].join(':'),
    // TLS 1.2 renegotiation started by the client costs the server a handshake each time and has been the
    // way into more than one attack; kube-apiserver never renegotiates. TLS 1.3 has no renegotiation.
    secureOptions: constants.SSL_OP_NO_RENEGOTIATION,
  };
}

export const DEFAULT_TLS_POLICY: TlsPolicy = tlsPolicy('VersionTLS12');
