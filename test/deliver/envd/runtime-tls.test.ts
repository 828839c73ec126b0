import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import forge from 'node-forge';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpCall, HttpCallError, requestTarget, runtimeAgent } from '../../../src/deliver/envd/http-call.js';
import { RUNTIME_TLS_PORT } from '../../../src/sandbox/api.js';
import {
  runtimeTlsAgent,
  runtimeTlsPort,
  tlsBundleFromSecretData,
  type RuntimeTlsBundle,
} from '../../../src/deliver/envd/runtime-tls.js';
import { startEnvdDouble, type EnvdDouble } from '../../support/envd-double.js';
import {
  runtimeClientCert,
  runtimeServerCert,
  runtimeTlsPki,
  runtimeTlsSecretData,
  RUNTIME_WILDCARD_NAME,
  type CertAndKey,
  type RuntimeTlsPki,
} from '../../support/runtime-tls-pki.js';
import { createCa } from '../../server/support/pki.js';
import { waitUntil } from '../../support/wait-until.js';

const b64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64');

describe('runtimeTlsPort', () => {
  it.each([
    [undefined, { kind: 'none' }],
    [{}, { kind: 'none' }],
    [{ [RUNTIME_TLS_PORT]: '' }, { kind: 'none' }],
    [{ [RUNTIME_TLS_PORT]: '49984' }, { kind: 'port', port: 49984 }],
    [{ [RUNTIME_TLS_PORT]: '1' }, { kind: 'port', port: 1 }],
    [{ [RUNTIME_TLS_PORT]: '65535' }, { kind: 'port', port: 65535 }],
    // What Go's strconv.Atoi accepts, as upstream reads it.
    [{ [RUNTIME_TLS_PORT]: '+443' }, { kind: 'port', port: 443 }],
    [{ [RUNTIME_TLS_PORT]: '0443' }, { kind: 'port', port: 443 }],
  ])('reads %j as %j', (annotations, expected) => {
    expect(runtimeTlsPort(annotations)).toEqual(expected);
  });

  it.each([
    '0',
    '65536',
    '-1',
    '-0',
    'https',
    '49984 ',
    ' 49984',
    '4998.4',
    '1e3',
    '0x50',
    '٤٤٣',
    '99999999999999999999',
  ])('refuses %j, naming the annotation', (value) => {
    const result = runtimeTlsPort({ [RUNTIME_TLS_PORT]: value });
    expect(result.kind).toBe('invalid');
    if (result.kind !== 'invalid') return;
    expect(result.reason).toContain(RUNTIME_TLS_PORT);
    expect(result.reason).toContain(JSON.stringify(value.slice(0, 16)));
  });

  it('quotes at most a short prefix of a long value', () => {
    const long = `7${'SECRET'.repeat(10_000)}`;
    const result = runtimeTlsPort({ [RUNTIME_TLS_PORT]: long });
    expect(result.kind).toBe('invalid');
    if (result.kind !== 'invalid') return;
    expect(result.reason.length).toBeLessThan(120);
    expect(result.reason.endsWith(`${JSON.stringify(long.slice(0, 16))}...`)).toBe(true);
  });

  it('refuses a value that is not a string without quoting it', () => {
    const result = runtimeTlsPort({ [RUNTIME_TLS_PORT]: 49984 });
    expect(result).toEqual({
      kind: 'invalid',
      reason: `annotation ${RUNTIME_TLS_PORT} is not a port from 1 to 65535: a number`,
    });
  });
});

let pki: RuntimeTlsPki;
let stranger: CertAndKey;
let strangerClient: CertAndKey;

beforeAll(() => {
  pki = runtimeTlsPki();
  stranger = createCa('stranger CA');
  strangerClient = runtimeClientCert(stranger, 'stranger');
});

describe('tlsBundleFromSecretData', () => {
  const name = 'sandbox-system/runtime-tls';

  it('takes ca.crt alone: server-authenticated TLS', () => {
    const bundle = tlsBundleFromSecretData(runtimeTlsSecretData(pki.ca.certPem), name);
    expect(bundle.ca).toBe(pki.ca.certPem);
    expect(bundle.client).toBeUndefined();
  });

  it('takes a CA bundle of several certificates, and the client pair', () => {
    const data = runtimeTlsSecretData(`${stranger.certPem}\n${pki.ca.certPem}`, pki.client);
    const bundle = tlsBundleFromSecretData(data, name);
    expect(bundle.client).toEqual({ cert: pki.client.certPem, key: pki.client.keyPem });
  });

  it('names the same material with the same digest, and other material with another', () => {
    const one = tlsBundleFromSecretData(runtimeTlsSecretData(pki.ca.certPem, pki.client), name);
    const again = tlsBundleFromSecretData(runtimeTlsSecretData(pki.ca.certPem, pki.client), name);
    const other = tlsBundleFromSecretData(runtimeTlsSecretData(pki.ca.certPem), name);
    expect(again.digest).toBe(one.digest);
    expect(other.digest).not.toBe(one.digest);
  });

  const encryptedKey = (): string =>
    forge.pki.encryptRsaPrivateKey(forge.pki.privateKeyFromPem(pki.client.keyPem), 'passphrase');

  const bad: [string, () => Record<string, string> | undefined, string][] = [
    ['no data at all', () => undefined, '"ca.crt" is missing or empty'],
    [
      'no ca.crt',
      () => ({ 'client.crt': b64(pki.client.certPem), 'client.key': b64(pki.client.keyPem) }),
      '"ca.crt" is missing or empty',
    ],
    ['an empty ca.crt', () => ({ 'ca.crt': '' }), '"ca.crt" is missing or empty'],
    ['a ca.crt of blanks', () => ({ 'ca.crt': b64(' \n') }), '"ca.crt" is missing or empty'],
    ['a ca.crt that is not base64', () => ({ 'ca.crt': '!!not base64!!' }), '"ca.crt" is not base64'],
    ['a ca.crt that is not PEM', () => ({ 'ca.crt': b64('hello') }), '"ca.crt" is not a PEM CA bundle'],
    [
      'a ca.crt holding a key, not a certificate',
      () => ({ 'ca.crt': b64(pki.ca.keyPem) }),
      '"ca.crt" is not a PEM CA bundle',
    ],
    [
      'a ca.crt with one broken block among good ones',
      () => ({ 'ca.crt': b64(`${pki.ca.certPem}-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n`) }),
      '"ca.crt" is not a PEM CA bundle',
    ],
    [
      'client.crt without client.key',
      () => ({ ...runtimeTlsSecretData(pki.ca.certPem), 'client.crt': b64(pki.client.certPem) }),
      '"client.crt" is set without "client.key" (set both or neither)',
    ],
    [
      'client.key without client.crt',
      () => ({ ...runtimeTlsSecretData(pki.ca.certPem), 'client.key': b64(pki.client.keyPem) }),
      '"client.key" is set without "client.crt" (set both or neither)',
    ],
    [
      'an empty client.crt beside client.key',
      () => ({ ...runtimeTlsSecretData(pki.ca.certPem, pki.client), 'client.crt': '' }),
      '"client.key" is set without "client.crt" (set both or neither)',
    ],
    [
      'a client.crt that is not PEM',
      () => ({ ...runtimeTlsSecretData(pki.ca.certPem, pki.client), 'client.crt': b64('not a certificate') }),
      '"client.crt" is not a PEM certificate',
    ],
    [
      'a client.crt holding the key',
      () => ({ ...runtimeTlsSecretData(pki.ca.certPem, pki.client), 'client.crt': b64(pki.client.keyPem) }),
      '"client.crt" is not a PEM certificate',
    ],
    [
      'a client.key that is not PEM',
      () => ({ ...runtimeTlsSecretData(pki.ca.certPem, pki.client), 'client.key': b64('not a key') }),
      '"client.key" is not an unencrypted PEM private key',
    ],
    [
      'an encrypted client.key',
      () => ({ ...runtimeTlsSecretData(pki.ca.certPem, pki.client), 'client.key': b64(encryptedKey()) }),
      '"client.key" is not an unencrypted PEM private key',
    ],
    [
      'a client.key of another certificate',
      () => ({ ...runtimeTlsSecretData(pki.ca.certPem, pki.client), 'client.key': b64(strangerClient.keyPem) }),
      '"client.key" is not the key of "client.crt"',
    ],
  ];

  it.each(bad)('refuses %s, naming the Secret and the key, never the material', (_what, data, message) => {
    let error: unknown;
    try {
      tlsBundleFromSecretData(data(), name);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(Error);
    const text = (error as Error).message;
    expect(text).toBe(`Secret ${name}: data key ${message}`);
    for (const secret of [pki.client.keyPem, strangerClient.keyPem, pki.client.certPem]) {
      const body = secret.split('\n')[1] ?? '';
      expect(text).not.toContain(body.slice(0, 20));
      expect(text).not.toContain(b64(secret).slice(0, 20));
    }
  });
});

describe('the runtime TLS agent, against an HTTPS envd double', () => {
  const limits = { timeoutMs: 5000, maxBodyBytes: 4096 };
  const doubles: EnvdDouble[] = [];
  let root: string;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'si-runtime-tls-'));
  });

  afterAll(async () => {
    await Promise.all(doubles.map((d) => d.close()));
    await rm(root, { recursive: true, force: true });
  });

  async function double(server: CertAndKey, requestClientCert = false): Promise<EnvdDouble> {
    const started = await startEnvdDouble({
      root,
      tls: { key: server.keyPem, cert: server.certPem, ca: pki.ca.certPem, requestClientCert },
    });
    doubles.push(started);
    return started;
  }

  function bundle(client?: CertAndKey): RuntimeTlsBundle {
    return tlsBundleFromSecretData(runtimeTlsSecretData(pki.ca.certPem, client), 'ns/runtime-tls');
  }

  /** GET .env_ready from the double: 404 (no file yet) once the request got through. */
  async function look(envd: EnvdDouble, client?: CertAndKey): Promise<number | string> {
    const url = `${envd.url}/files?path=/var/sandbox/.env_ready&username=root`;
    try {
      return (
        await httpCall(runtimeTlsAgent(bundle(client)), requestTarget(url), { method: 'GET', headers: {} }, limits)
      ).status;
    } catch (error) {
      if (error instanceof HttpCallError) return error.problem;
      throw error;
    }
  }

  it('reaches a runtime at its IP whose certificate names the runtime', async () => {
    const envd = await double(pki.server);
    expect(envd.url.startsWith('https://127.0.0.1:')).toBe(true);
    expect(await look(envd)).toBe(404);
    expect(envd.requests.map((r) => r.operation)).toEqual(['get']);
  });

  it('accepts a certificate with only the wildcard name, as upstream issues them', async () => {
    const envd = await double(runtimeServerCert(pki.ca, [RUNTIME_WILDCARD_NAME]));
    expect(await look(envd)).toBe(404);
  });

  it('refuses a certificate for the IP it dials: the runtime name is checked, not the URL host', async () => {
    const envd = await double(runtimeServerCert(pki.ca, ['other.example'], ['127.0.0.1']));
    expect(await look(envd)).toBe('ERR_TLS_CERT_ALTNAME_INVALID');
    expect(envd.requests).toEqual([]);
  });

  it('refuses a runtime whose certificate another CA signed', async () => {
    const envd = await double(runtimeServerCert(stranger));
    expect(await look(envd)).toBe('UNABLE_TO_VERIFY_LEAF_SIGNATURE');
    expect(envd.requests).toEqual([]);
  });

  it('counts a plain-HTTP request to a TLS runtime as a failed handshake, never as a request', async () => {
    const envd = await double(pki.server, true);
    const plainUrl = `${envd.url.replace('https:', 'http:')}/files?path=/var/sandbox/.env_ready&username=root`;
    const error = await httpCall(runtimeAgent(), requestTarget(plainUrl), { method: 'GET', headers: {} }, limits).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(HttpCallError);
    await waitUntil(() => envd.handshakeFailures, {
      what: "envd's failed handshake",
      timeoutMs: 10_000,
      intervalMs: 5,
      until: (failures) => failures === 1,
    });
    expect(envd.requests).toEqual([]);
  });

  it('presents the client certificate to a runtime that requires one, and is refused without it', async () => {
    const envd = await double(pki.server, true);
    expect(await look(envd, pki.client)).toBe(404);
    expect(envd.requests.map((r) => r.clientCommonName)).toEqual(['sandbox-injector-deliver-env']);
    const refused = /^(ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED|ERR_SSL_TLSV13_ALERT_UNKNOWN_CA|ECONNRESET)$/;
    expect(await look(envd)).toMatch(refused);
    expect(await look(envd, strangerClient)).toMatch(refused);
    expect(envd.requests).toHaveLength(1);
    expect(envd.handshakeFailures).toBeGreaterThanOrEqual(2);
  });
});
