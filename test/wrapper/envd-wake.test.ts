/**
 * The wake as deliver-env sends it (docs/env-file.md, "Waking the wrapper"): after .env_ready is in place, an
 * upload of one byte to .env_wake through envd's file API. Here through the envd double (test/support/envd-
 * double.ts, which follows envd's published spec and, like envd, opens an upload's target O_WRONLY|O_TRUNC in
 * place, so into the FIFO), with the real wrapper under bash.
 */
import { spawn } from 'node:child_process';
import { stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { multipartForm } from '../../src/deliver/envd/http-call.js';
import { startEnvdDouble, type EnvdDouble } from '../support/envd-double.js';
import {
  makeTempDir,
  removeDir,
  startWrapper,
  waitUntilBlockedOpening,
  waitUntilWaiting,
  within,
} from './run-wrapper.js';

let dir: string;
let envd: EnvdDouble;

beforeEach(async () => {
  dir = await makeTempDir('envd-wake');
  envd = await startEnvdDouble({ root: dir, token: 'wake-token', halfWriteMs: 0 });
});

afterEach(async () => {
  await envd.close();
  await removeDir(dir);
});

async function upload(podPath: string, content: string): Promise<number> {
  const form = multipartForm([{ name: 'file', filename: path.posix.basename(podPath), content }]);
  const query = new URLSearchParams({ path: podPath, username: 'root' });
  const answer = await fetch(`${envd.url}/files?${query.toString()}`, {
    method: 'POST',
    headers: { 'content-type': form.type, 'x-access-token': 'wake-token' },
    body: form.body,
  });
  await answer.arrayBuffer();
  return answer.status;
}

async function move(source: string, destination: string): Promise<number> {
  const answer = await fetch(`${envd.url}/filesystem.Filesystem/Move`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-access-token': 'wake-token',
      authorization: `Basic ${Buffer.from('root:').toString('base64')}`,
    },
    body: JSON.stringify({ source, destination }),
  });
  await answer.arrayBuffer();
  return answer.status;
}

describe('the wake request through envd', () => {
  it('after .env_ready is moved into place, an upload of one byte to .env_wake starts the command', async () => {
    const run = startWrapper(['--', 'bash', '-c', 'printf %s "$CLAIM"'], { envDir: dir });
    expect(await waitUntilWaiting(run.child.pid ?? -1, dir)).toBe('fifo');
    expect(await upload('/var/sandbox/env.sh', "export CLAIM='claimed'\n")).toBe(200);
    expect(await upload('/var/sandbox/.env_ready.tmp', 'sha256:x')).toBe(200);
    expect(await move('/var/sandbox/.env_ready.tmp', '/var/sandbox/.env_ready')).toBe(200);
    expect(await upload('/var/sandbox/.env_wake', '\n')).toBe(200);
    const result = await within(run.done, 10_000, 'the woken command');
    expect(result.code).toBe(0);
    expect(result.stdout.toString()).toBe('claimed');
    // Still the FIFO: the upload wrote into it rather than replacing it.
    expect((await stat(path.join(dir, '.env_wake'))).isFIFO()).toBe(true);
  });
});

describe('a writer blocked on a FIFO that nobody holds', () => {
  it('is let go by the next wrapper that starts, even when .env_ready is there and it does not wait', async () => {
    // The FIFO of a wrapper stopped while waiting, then a blocking writer (what envd's upload is) stuck on it.
    const first = startWrapper(['--', 'true'], { envDir: dir });
    await waitUntilWaiting(first.child.pid ?? -1, dir);
    first.child.kill('SIGTERM');
    expect((await within(first.done, 10_000, 'the first wrapper stopping')).code).toBe(143);
    const writer = spawn('bash', ['-c', 'printf x > "$1"', 'bash', path.join(dir, '.env_wake')], { stdio: 'ignore' });
    const writerDone = new Promise<number | null>((resolve) => writer.on('close', resolve));
    try {
      // Only a writer already inside its open can be let go: one that opens after the second wrapper's own
      // open and close would block for a reader that never comes, a test that fails under load for no fault.
      await waitUntilBlockedOpening(writer.pid ?? -1);
      await writeFile(path.join(dir, '.env_ready'), '');
      const second = await within(startWrapper(['--', 'true'], { envDir: dir }).done, 10_000, 'the second wrapper');
      expect(second.code).toBe(0);
      // Let go: its open returned; its byte found no reader (EPIPE), so it ends either way.
      await within(writerDone, 10_000, 'the blocked writer');
    } finally {
      writer.kill('SIGKILL');
    }
  });
});
