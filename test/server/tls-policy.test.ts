/**
 * TLS as kube-apiserver serves it, checked with real handshakes: TLS 1.2 and 1.3 only, on 1.2 only ECDHE
 * with AEAD ciphers, no renegotiation started by the client, and the same after a certificate reload. The
 * flags --tls-min-version and --tls-cipher-suites narrow it further.
 */
import { connect, type ConnectionOptions } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTlsMaterial } from '../../src/server/tls/material.js';
import { DEFAULT_TLS_POLICY } from '../../src/server/tls/policy.js';
import { startTlsReloader } from '../../src/server/tls/reloader.js';
import { servingPki, temporaryDirectory } from './support/pki.js';
import { startTestServer, type TestServer } from './support/server.js';
import { ManualClock } from '../support/manual-clock.js';

let tlsFiles: Awaited<ReturnType<typeof servingPki>>;
let otherFiles: Awaited<ReturnType<typeof servingPki>>;
let server: TestServer;
let removeDir: () => Promise<void>;

beforeAll(async () => {
  const { dir, remove } = await temporaryDirectory('tls-policy');
  removeDir = remove;
  tlsFiles = await servingPki(`${dir}/a`);
  otherFiles = await servingPki(`${dir}/b`);
  server = await startTestServer({ tls: tlsFiles, caFile: tlsFiles.caCertFile });
});

afterAll(async () => {
  await server.close();
  await removeDir();
});

/** The protocol and cipher agreed, or `refused` when the handshake fails. */
function handshake(port: number, options: Partial<ConnectionOptions>): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port, servername: 'localhost', rejectUnauthorized: false, ...options });
    socket.once('secureConnect', () => {
      resolve(`${socket.getProtocol() ?? '?'} ${socket.getCipher().name}`);
      socket.destroy();
    });
    socket.once('error', () => resolve('refused'));
  });
}

const tls12 = (ciphers: string): Partial<ConnectionOptions> => ({
  minVersion: 'TLSv1.2',
  maxVersion: 'TLSv1.2',
  ciphers,
});

describe('the default TLS policy', () => {
  it.each([
    ['AES128-SHA', 'static RSA key exchange, CBC'],
    ['AES256-GCM-SHA384', 'static RSA key exchange'],
    ['ECDHE-RSA-AES128-SHA', 'ECDHE but CBC with SHA-1'],
    ['ECDHE-RSA-AES256-SHA384', 'ECDHE but CBC'],
  ])('refuses a TLS 1.2 client offering only %s (%s)', async (cipher) => {
    expect(await handshake(server.port, tls12(cipher))).toBe('refused');
  });

  it.each(['ECDHE-RSA-AES128-GCM-SHA256', 'ECDHE-RSA-AES256-GCM-SHA384', 'ECDHE-RSA-CHACHA20-POLY1305'])(
    'accepts TLS 1.2 with %s',
    async (cipher) => {
      expect(await handshake(server.port, tls12(cipher))).toBe(`TLSv1.2 ${cipher}`);
    },
  );

  it('refuses TLS 1.1 and accepts TLS 1.3', async () => {
    expect(
      await handshake(server.port, { minVersion: 'TLSv1.1', maxVersion: 'TLSv1.1', ciphers: 'DEFAULT@SECLEVEL=0' }),
    ).toBe('refused');
    expect(await handshake(server.port, { minVersion: 'TLSv1.3' })).toMatch(/^TLSv1\.3 /);
  });

  it('refuses a renegotiation the client starts', async () => {
    const outcome = await new Promise<string>((resolve) => {
      const socket = connect({
        host: '127.0.0.1',
        port: server.port,
        servername: 'localhost',
        rejectUnauthorized: false,
        maxVersion: 'TLSv1.2',
      });
      socket.once('secureConnect', () => {
        socket.renegotiate({ rejectUnauthorized: false }, (error) => {
          resolve(error === null ? 'renegotiated' : 'refused');
          socket.destroy();
        });
      });
      socket.on('error', () => resolve('refused'));
    });
    expect(outcome).toBe('refused');
  });

  it('keeps the policy across a certificate reload', async () => {
    const reloader = startTlsReloader({
      files: otherFiles,
      initial: await loadTlsMaterial(tlsFiles),
      target: server.app.server,
      watch: () => ({ close: () => undefined }),
      clock: new ManualClock({ fastForward: true }),
      attempts: 1,
      retryDelayMs: 0,
      policy: DEFAULT_TLS_POLICY,
      onResult: () => undefined,
    });
    try {
      expect((await reloader.reload()).kind).toBe('reloaded');
      expect(await handshake(server.port, tls12('AES128-SHA'))).toBe('refused');
      expect(await handshake(server.port, tls12('ECDHE-RSA-AES128-GCM-SHA256'))).toBe(
        'TLSv1.2 ECDHE-RSA-AES128-GCM-SHA256',
      );
    } finally {
      await reloader.close();
    }
  });
});

describe('--tls-min-version and --tls-cipher-suites', () => {
  it('serves only the suites named, by their IANA names', async () => {
    const narrow = await startTestServer({
      tls: tlsFiles,
      caFile: tlsFiles.caCertFile,
      flags: ['--tls-cipher-suites', 'TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384'],
    });
    try {
      expect(await handshake(narrow.port, tls12('ECDHE-RSA-AES128-GCM-SHA256'))).toBe('refused');
      expect(await handshake(narrow.port, tls12('ECDHE-RSA-AES256-GCM-SHA384'))).toBe(
        'TLSv1.2 ECDHE-RSA-AES256-GCM-SHA384',
      );
      expect(await handshake(narrow.port, { minVersion: 'TLSv1.3' })).toMatch(/^TLSv1\.3 /);
    } finally {
      await narrow.close();
    }
  });

  it('VersionTLS13 refuses TLS 1.2', async () => {
    const modern = await startTestServer({
      tls: tlsFiles,
      caFile: tlsFiles.caCertFile,
      flags: ['--tls-min-version', 'VersionTLS13'],
    });
    try {
      expect(await handshake(modern.port, tls12('ECDHE-RSA-AES128-GCM-SHA256'))).toBe('refused');
      expect(await handshake(modern.port, { minVersion: 'TLSv1.3' })).toMatch(/^TLSv1\.3 /);
    } finally {
      await modern.close();
    }
  });
});
