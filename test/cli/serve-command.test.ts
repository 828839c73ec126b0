/** `sandbox-injector serve` as a process: exit codes for bad options and unusable files, and a full start. */
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConformanceCases, reviewFor } from '../support/conformance.js';
import { MAIN, spawnServer } from '../server/support/child-server.js';
import { postJson } from '../server/support/https-client.js';
import { servingPki, temporaryDirectory } from '../server/support/pki.js';

const run = promisify(execFile);
const basic = loadConformanceCases().find((c) => c.name === 'agent-runtime-basic');
if (basic === undefined) throw new Error('conformance case agent-runtime-basic is missing');

let dir: string;
let removeDir: () => Promise<void>;
beforeAll(async () => {
  ({ dir, remove: removeDir } = await temporaryDirectory('serve-command'));
  await writeFile(`${dir}/config.json`, JSON.stringify(basic.configMap));
});
afterAll(() => removeDir());

async function exitOf(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
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
      '--host', '127.0.0.1', '--port', '0', '--metrics-port', '0', '--config-file', `${dir}/config.json`,
      '--tls-cert-file', a.certFile, '--tls-key-file', b.keyFile,
    ]);
    expect(code).toBe(1);
    const fatal = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as { level: number; err?: { message: string } };
    expect(fatal.level).toBe(60);
    expect(fatal.err?.message).toContain('does not match certificate');
    expect(stdout).not.toContain('PRIVATE KEY');
  });

  it('serves with given certificate files, config from SANDBOX_INJECTOR_CONFIG_FILE', async () => {
    const pki = await servingPki(`${dir}/given`);
    const server = await spawnServer(
      ['--host', '127.0.0.1', '--port', '0', '--metrics-port', '0', '--tls-cert-file', pki.certFile, '--tls-key-file', pki.keyFile],
      dir,
      { SANDBOX_INJECTOR_CONFIG_FILE: `${dir}/config.json` },
    );
    try {
      const ca = await readFile(pki.caCertFile);
      const result = await postJson(`https://127.0.0.1:${server.port}/mutate`, reviewFor(basic.pod), { ca });
      expect(result.status).toBe(200);
      expect((result.json() as { response: { patchType?: string } }).response.patchType).toBe('JSONPatch');
      expect(await server.logged('listening')).toMatchObject({ configFile: `${dir}/config.json`, certFile: pki.certFile, node: process.version });
    } finally {
      server.child.kill('SIGTERM');
      expect((await server.exited).code).toBe(0);
    }
  });
});
