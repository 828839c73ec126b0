/**
 * Who can change the env folder once the wrapper has run (docs/env-file.md, "Who can change the folder"): these
 * tests play the sandbox's own non-root user (uid 1000, as E2B runs tenant code) against the files the wrapper
 * runs and trusts, in a folder as the kubelet makes an emptyDir (mode 0777, no sticky bit) with the script in it
 * as the wrapper init container leaves it (uid 65532, 0755). The wrapper runs as root, as the main container of
 * E2B's images does; the tests must run as root to be both.
 */
import {
  chmod,
  chown,
  copyFile,
  lstat,
  mkdir,
  mkdtemp,
  readFile,
  rename,
  rm,
  stat,
  symlink,
  unlink,
  writeFile,
} from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import {
  ENV_FILE_NAME,
  READY_FILE_NAME,
  RECYCLED_FILE_NAME,
  WAKE_FILE_NAME,
  WRAPPER_SCRIPT,
} from '../../src/wrapper/env-dir.js';
import {
  TENANT_UID,
  WRAPPER_PATH,
  attemptAs,
  removeDir,
  runWrapper,
  startWrapper,
  waitUntilWaiting,
  within,
  writeWake,
  type AttackOp,
  type AttackStep,
  type WrapperOptions,
} from './run-wrapper.js';

/** The uid the wrapper init container (our image, distroless nonroot) copies the script as. */
const COPIER_UID = 65532;
const DEADLINE_MS = 10_000;

let dir: string;
let script: string;
const at = (name: string) => path.join(dir, name);

beforeAll(() => {
  if (process.getuid?.() !== 0) {
    throw new Error('these tests run the wrapper as root and attack it as uid 1000: run them as root (CI does)');
  }
});

beforeEach(async () => {
  // Under a folder every uid can reach, as the pod's volume is: mkdtemp makes its own 0700.
  dir = await mkdtemp(path.join(os.tmpdir(), 'env-folder-'));
  await chmod(dir, 0o777);
  script = at(WRAPPER_SCRIPT);
  await copyFile(WRAPPER_PATH, script);
  await chown(script, COPIER_UID, COPIER_UID);
  await chmod(script, 0o755);
});

afterEach(async () => {
  await removeDir(dir);
});

/** The wrapper as a pod runs it: its copy in the folder, as root unless `user` says otherwise. */
const options = (more: Partial<WrapperOptions> = {}): WrapperOptions => ({ envDir: dir, script, ...more });

/** deliver-env's writes, as envd (root) makes them: 0644, a temporary name renamed into place; then the wake. */
async function deliverAsRoot(envSh: string): Promise<void> {
  await writeFile(at('.env.sh.0123456789abcdef.tmp'), envSh, { mode: 0o644 });
  await rename(at('.env.sh.0123456789abcdef.tmp'), at(ENV_FILE_NAME));
  await writeFile(at('.env_ready.0123456789abcdef.tmp'), 'sha256:test', { mode: 0o644 });
  await rename(at('.env_ready.0123456789abcdef.tmp'), at(READY_FILE_NAME));
}

/** Every way a process can change `names` in the folder, and add to it. */
function everyChange(names: readonly string[]): AttackStep[] {
  const ops: AttackOp[] = ['write', 'replace', 'rename', 'unlink', 'chmod'];
  return [
    ...names.flatMap((name) => ops.map((op) => ({ op, path: at(name) }))),
    { op: 'create', path: at('planted.sh') },
    { op: 'symlink', path: at('planted-link') },
    { op: 'chmod', path: dir },
  ];
}

const label = (step: AttackStep) => `${step.op} ${path.relative(dir, step.path) || '.'}`;

/**
 * Each step with its result, EACCES and EPERM shown as "denied", so that a failure names what went through (and
 * how far: "ok", or another error such as ENXIO).
 */
async function attack(steps: readonly AttackStep[]): Promise<string[]> {
  const results = await attemptAs(TENANT_UID, steps);
  return steps.map((step, i) => `${label(step)}: ${/^(EACCES|EPERM)$/.test(results[i] ?? '') ? 'denied' : results[i]}`);
}

/** What `attack` answers when every step was refused. */
const deniedEach = (steps: readonly AttackStep[]): string[] => steps.map((step) => `${label(step)}: denied`);

describe('the env folder after the wrapper ran as root', () => {
  it('uid 1000 cannot replace, rename, remove or add anything a wrapper runs or trusts; root still can', async () => {
    const run = startWrapper(['--', 'bash', '-c', 'printf %s "$CLAIM"'], options());
    expect(await waitUntilWaiting(run.child.pid ?? -1, dir)).toBe('fifo');
    await deliverAsRoot("export CLAIM='from envd'\n");
    expect(await writeWake(dir)).toBe(true);
    const result = await within(run.done, DEADLINE_MS, 'the woken command');
    expect(result.stdout.toString()).toBe('from envd');
    const scriptBefore = await readFile(script);

    const steps = everyChange([WRAPPER_SCRIPT, ENV_FILE_NAME, READY_FILE_NAME, WAKE_FILE_NAME]);
    expect(await attack(steps)).toEqual(deniedEach(steps));

    // Nothing changed: the same script and env.sh, the FIFO root's, nothing added.
    expect(await readFile(script)).toEqual(scriptBefore);
    expect(await readFile(at(ENV_FILE_NAME), 'utf8')).toBe("export CLAIM='from envd'\n");
    const wake = await lstat(at(WAKE_FILE_NAME));
    expect([wake.isFIFO(), wake.uid, wake.mode & 0o7777]).toEqual([true, 0, 0o600]);
    const folder = await stat(dir);
    expect([folder.uid, folder.gid, folder.mode & 0o7777]).toEqual([0, 0, 0o1755]);
    const installed = await stat(script);
    expect([installed.uid, installed.gid, installed.mode & 0o7777]).toEqual([0, 0, 0o555]);

    // envd's writes, as root, still go: a new env.sh by rename, .env_ready removed (clearing), a new file.
    await deliverAsRoot("export CLAIM='again'\n");
    await unlink(at(READY_FILE_NAME));
    await writeFile(at('note.txt'), 'root may\n');
    expect(await readFile(at(ENV_FILE_NAME), 'utf8')).toBe("export CLAIM='again'\n");
  });

  it('uid 1000 cannot remove, rewrite or replace the recycled mark that ends its claim', async () => {
    expect((await runWrapper(['--probe', '--', 'true'], options())).code).toBe(0);
    // Clearing's mark, as envd (root) writes it: a temporary name renamed into place.
    await writeFile(at('.env_recycled.0123456789abcdef.tmp'), 'container main containerd://1\n', { mode: 0o644 });
    await rename(at('.env_recycled.0123456789abcdef.tmp'), at(RECYCLED_FILE_NAME));
    const steps = everyChange([RECYCLED_FILE_NAME]);
    expect(await attack(steps)).toEqual(deniedEach(steps));
    expect(await readFile(at(RECYCLED_FILE_NAME), 'utf8')).toBe('container main containerd://1\n');
  });

  it('an unclaimed exec probe takes the folder too: uid 1000 cannot start the sandbox early or plant an env', async () => {
    expect((await runWrapper(['--probe', '--', 'false'], options())).code).toBe(0);
    const steps: AttackStep[] = [
      { op: 'create', path: at(READY_FILE_NAME) },
      { op: 'create', path: at(ENV_FILE_NAME) },
      { op: 'create', path: at(WAKE_FILE_NAME) },
      { op: 'symlink', path: at(ENV_FILE_NAME) },
      ...(['write', 'replace', 'rename', 'unlink', 'chmod'] as const).map((op) => ({ op, path: script })),
      { op: 'chmod', path: dir },
    ];
    expect(await attack(steps)).toEqual(deniedEach(steps));
  });
});

describe('what was planted in the folder before the wrapper took it', () => {
  it('a plain file at .env_wake is replaced by a FIFO of root, 0600, and the wake goes through it', async () => {
    await writeFile(at(WAKE_FILE_NAME), 'planted\n');
    await chown(at(WAKE_FILE_NAME), COPIER_UID, COPIER_UID);
    const run = startWrapper(['--', 'bash', '-c', 'printf %s "$CLAIM"'], options());
    expect(await waitUntilWaiting(run.child.pid ?? -1, dir)).toBe('fifo');
    const wake = await lstat(at(WAKE_FILE_NAME));
    expect([wake.isFIFO(), wake.uid, wake.mode & 0o777]).toEqual([true, 0, 0o600]);
    await deliverAsRoot("CLAIM='woken'\n");
    expect(await writeWake(dir)).toBe(true);
    expect((await within(run.done, DEADLINE_MS, 'the woken command')).stdout.toString()).toBe('woken');
  });

  it("another user's FIFO, or a symlink, at .env_wake is not trusted: root's own FIFO takes its place", async () => {
    for (const plant of ['fifo of uid 1000', 'symlink'] as const) {
      // The root FIFO of the round before goes, as if it never was.
      await rm(at(WAKE_FILE_NAME), { force: true });
      const elsewhere = path.join(dir, 'elsewhere');
      await mkdir(elsewhere);
      if (plant === 'symlink') {
        await writeFile(path.join(elsewhere, 'target'), 'not for the wrapper\n');
        await symlink(path.join(elsewhere, 'target'), at(WAKE_FILE_NAME));
      } else {
        // What a wrapper run as uid 1000 makes: the FIFO of the non-root case, 0666.
        const first = startWrapper(['--', 'true'], options({ user: TENANT_UID }));
        await waitUntilWaiting(first.child.pid ?? -1, dir);
        first.child.kill('SIGTERM');
        expect((await within(first.done, DEADLINE_MS, 'the uid 1000 wrapper')).code).toBe(143);
        expect((await lstat(at(WAKE_FILE_NAME))).uid).toBe(TENANT_UID);
      }
      const run = startWrapper(['--', 'true'], options());
      expect(await waitUntilWaiting(run.child.pid ?? -1, dir), plant).toBe('fifo');
      const wake = await lstat(at(WAKE_FILE_NAME));
      expect([plant, wake.isFIFO(), wake.uid, wake.mode & 0o777]).toEqual([plant, true, 0, 0o600]);
      run.child.kill('SIGTERM');
      expect((await within(run.done, DEADLINE_MS, 'the root wrapper')).code).toBe(143);
      if (plant === 'symlink') {
        expect(await readFile(path.join(elsewhere, 'target'), 'utf8')).toBe('not for the wrapper\n');
      }
      await removeDir(elsewhere);
    }
  });

  it('an env.sh that root does not own is never sourced: the command runs without it, and stderr says why', async () => {
    await writeFile(at(ENV_FILE_NAME), "PLANTED='yes'\nexport PATH=/planted\n");
    await chown(at(ENV_FILE_NAME), COPIER_UID, COPIER_UID);
    await writeFile(at(READY_FILE_NAME), '');
    for (const mode of [[], ['--probe']]) {
      const result = await runWrapper([...mode, '--', 'bash', '-c', 'printf %s "${PLANTED-unset}"'], options());
      expect([mode, result.code, result.stdout.toString()]).toEqual([mode, 0, 'unset']);
      expect(result.stderr).toContain(`${at(ENV_FILE_NAME)} is not owned by root, so it is not loaded`);
    }
    // Once envd (root) writes it, it is the claim's and is loaded.
    await deliverAsRoot("PLANTED='from envd'\n");
    const result = await runWrapper(['--', 'bash', '-c', 'printf %s "$PLANTED"'], options());
    expect([result.stdout.toString(), result.stderr]).toEqual(['from envd', '']);
  });
});

describe('the take is done once', () => {
  it('a run after the take starts no chown, chmod, rm or mkfifo, and changes nothing in the folder', async () => {
    // The pod's first wrapper takes the folder and makes its FIFO while it waits; the claim ends the wait.
    const first = startWrapper(['--', 'true'], options());
    expect(await waitUntilWaiting(first.child.pid ?? -1, dir)).toBe('fifo');
    // Each of these, if run, leaves its name in the log.
    const stubs = path.join(os.tmpdir(), `stubs-${path.basename(dir)}`);
    await mkdir(stubs);
    try {
      const log = path.join(stubs, 'ran');
      for (const name of ['chown', 'chmod', 'rm', 'mkfifo']) {
        await writeFile(path.join(stubs, name), `#!/bin/bash\necho ${name} >> ${log}\nexit 1\n`, { mode: 0o755 });
      }
      const env = { PATH: `${stubs}:${process.env.PATH ?? '/usr/bin:/bin'}` };
      await deliverAsRoot('');
      expect(await writeWake(dir)).toBe(true);
      expect((await within(first.done, DEADLINE_MS, 'the first wrapper')).code).toBe(0);
      const before = await stat(dir);
      for (const mode of [['--probe'], []]) {
        const result = await runWrapper([...mode, '--', 'true'], options({ env }));
        expect([mode, result.code, result.stderr]).toEqual([mode, 0, '']);
      }
      await expect(readFile(log, 'utf8')).rejects.toMatchObject({ code: 'ENOENT' });
      // A chmod or chown of the folder, even to the same mode, would have changed its ctime.
      expect((await stat(dir)).ctimeMs).toBe(before.ctimeMs);
    } finally {
      await removeDir(stubs);
    }
  });
});

describe('a container that does not run as root', () => {
  it('cannot take the folder: it stays as the kubelet made it, and its FIFO is writable by every user', async () => {
    const run = startWrapper(['--', 'true'], options({ user: TENANT_UID }));
    expect(await waitUntilWaiting(run.child.pid ?? -1, dir)).toBe('fifo');
    const wake = await lstat(at(WAKE_FILE_NAME));
    expect([wake.isFIFO(), wake.uid, wake.mode & 0o777]).toEqual([true, TENANT_UID, 0o666]);
    expect((await stat(dir)).mode & 0o7777).toBe(0o777);
    run.child.kill('SIGTERM');
    expect((await within(run.done, DEADLINE_MS, 'exit on SIGTERM')).code).toBe(143);
    expect((await runWrapper(['--probe', '--', 'true'], options({ user: TENANT_UID }))).stderr).toBe('');
  });
});

describe('the wrapper run from another folder, as the tests run it', () => {
  it('takes the env folder and leaves a script that is not in it alone', async () => {
    const source = await stat(WRAPPER_PATH);
    expect((await runWrapper(['--probe', '--', 'true'], { envDir: dir })).code).toBe(0);
    expect((await stat(dir)).mode & 0o7777).toBe(0o1755);
    expect((await stat(WRAPPER_PATH)).ctimeMs).toBe(source.ctimeMs);
  });
});
