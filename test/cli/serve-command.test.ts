/** `sandbox-injector serve` as a process: exit codes for bad options and unusable files, and a full start. */
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConformanceCases, reviewFor } from '../support/conformance.js';
import { MAIN, spawnServer } from '../server/support/child-server.js';
import { postJson } from '../server/support/https-client.js';
import { servingPki, temporaryDirectory } from '../server/support/pki.js';

const run = promisify(execFile);
const PACKAGE = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};
const LOCAL = ['--host', '127.0.0.1', '--port', '0', '--metrics-port', '0'];
const basic = loadConformanceCases().find((c) => c.name === 'agent-runtime-basic');
if (basic === undefined) throw new Error('conformance case agent-runtime-basic is missing');

let dir: string;
let removeDir: () => Promise<void>;
beforeAll(async () => {
  ({ dir, remove: removeDir } = await temporaryDirectory('serve-command'));
  await writeFile(`${dir}/config.json`, JSON.stringify(basic.configMap));
});
afterAll(() => removeDir());

async function exitOf(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [MAIN, 'serve', ...args], {
      cwd: dir,
      env: { ...process.env, ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe('sandbox-injector serve', () => {
  it('--help prints the options and exits 0', async () => {
    const { code, stdout } = await exitOf(['--help']);
    expect(code).toBe(0);
    expect(stdout).toContain('--tls-client-ca-file');
  });

  it('exits 2 on bad options, naming the flag and its env var', async () => {
    const { code, stderr } = await exitOf(['--port', 'https']);
    expect(code).toBe(2);
    expect(stderr).toContain('--port (SANDBOX_INJECTOR_PORT): must be integer');
  });

  it('exits 2 on a bad env var too', async () => {
    const { code, stderr } = await exitOf([], { SANDBOX_INJECTOR_LOG_LEVEL: 'chatty' });
    expect(code).toBe(2);
    expect(stderr).toContain('SANDBOX_INJECTOR_LOG_LEVEL');
  });

  it('exits 1 with a fatal log line when the key does not match the certificate', async () => {
    const a = await servingPki(`${dir}/a`);
    const b = await servingPki(`${dir}/b`);
    const { code, stdout } = await exitOf([
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--metrics-port',
      '0',
      '--config-file',
      `${dir}/config.json`,
      '--tls-cert-file',
      a.certFile,
      '--tls-key-file',
      b.keyFile,
    ]);
    expect(code).toBe(1);
    const fatal = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as { level: number; err?: { message: string } };
    expect(fatal.level).toBe(60);
    expect(fatal.err?.message).toContain('does not match certificate');
    expect(stdout).not.toContain('PRIVATE KEY');
  });

  describe('a start-up failure also says on stderr, in one plain line, what to do', () => {
    it('a port in use names the flag to change', async () => {
      const holder = createServer();
      await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
      const { port } = holder.address() as AddressInfo;
      try {
        const { code, stderr } = await exitOf([
          '--host',
          '127.0.0.1',
          '--port',
          String(port),
          '--metrics-port',
          '0',
          '--config-file',
          `${dir}/config.json`,
        ]);
        expect(code).toBe(1);
        expect(stderr).toBe(
          `sandbox-injector serve: cannot start: listen EADDRINUSE: address already in use 127.0.0.1:${port}; ` +
            'another process listens on that port: stop it, or choose another --port (0 picks a free one)\n',
        );
      } finally {
        await new Promise((resolve) => holder.close(resolve));
      }
    });

    it('an unreadable certificate names the file and the flags', async () => {
      // Only the certificate is missing: with both missing, which read fails first is up to the file system.
      const { keyFile } = await servingPki(`${dir}/key-only`);
      const { code, stderr } = await exitOf([
        ...LOCAL,
        '--config-file',
        `${dir}/config.json`,
        '--tls-cert-file',
        `${dir}/none.crt`,
        '--tls-key-file',
        keyFile,
      ]);
      expect(code).toBe(1);
      expect(stderr).toMatch(
        /^sandbox-injector serve: cannot start: cannot read .*none\.crt: ENOENT.*; fix that file, or point --tls-cert-file and --tls-key-file/,
      );
      expect(stderr.split('\n')).toHaveLength(2);
    });

    it('a missing config directory names --config-file, not the watch', async () => {
      const { code, stdout, stderr } = await exitOf([...LOCAL, '--config-file', `${dir}/no-such-dir/config.yaml`]);
      expect(code).toBe(1);
      expect(stderr).toBe(
        `sandbox-injector serve: cannot start: --config-file ${dir}/no-such-dir/config.yaml: the directory ${dir}/no-such-dir does not exist; ` +
          'create it, or point --config-file (SANDBOX_INJECTOR_CONFIG_FILE) into a directory that exists: it is watched for the file\n',
      );
      expect(stdout).not.toContain('ENOENT');
    });
  });

  it('serves with given certificate files, config from SANDBOX_INJECTOR_CONFIG_FILE', async () => {
    const pki = await servingPki(`${dir}/given`);
    const server = await spawnServer(
      [
        '--host',
        '127.0.0.1',
        '--port',
        '0',
        '--metrics-port',
        '0',
        '--tls-cert-file',
        pki.certFile,
        '--tls-key-file',
        pki.keyFile,
      ],
      dir,
      { SANDBOX_INJECTOR_CONFIG_FILE: `${dir}/config.json` },
    );
    try {
      const ca = await readFile(pki.caCertFile);
      const result = await postJson(`https://127.0.0.1:${server.port}/mutate`, reviewFor(basic.pod), { ca });
      expect(result.status).toBe(200);
      expect((result.json() as { response: { patchType?: string } }).response.patchType).toBe('JSONPatch');
      expect(await server.logged('listening')).toMatchObject({
        configFile: `${dir}/config.json`,
        certFile: pki.certFile,
        version: PACKAGE.version,
        node: process.version,
      });
    } finally {
      server.child.kill('SIGTERM');
      expect((await server.exited).code).toBe(0);
    }
  });
});
