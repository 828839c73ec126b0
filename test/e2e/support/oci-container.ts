// Runs a command of the built image with runc, the way the kubelet's runtime runs a container of a pod: the
// image's root filesystem read-only, a numeric user, no capabilities, no privilege escalation, the image's env
// under the container's, and volumes mounted where the pod spec puts them. It keeps the host's network
// namespace, so the container reaches the test's kube-apiserver on loopback and the apiserver reaches it.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter, once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { ImageConfig } from './image-build.js';

const run = promisify(execFile);

export interface Volume {
  /** Where the container sees it. */
  mountPath: string;
  /** A host folder, bind-mounted: it stands for an emptyDir (made as the kubelet makes it) or a projected volume. */
  hostPath: string;
  readOnly?: boolean;
}

export interface ContainerSpec {
  rootfs: string;
  image: ImageConfig;
  /** Replaces the image's ENTRYPOINT, as a pod's `command` does. */
  command?: string[];
  /** Replaces the image's CMD, as a pod's `args` do. */
  args?: string[];
  env?: Record<string, string>;
  uid: number;
  gid: number;
  /** The container's securityContext.readOnlyRootFilesystem. */
  readOnlyRoot: boolean;
  volumes?: Volume[];
}

export interface RunningContainer {
  id: string;
  /** Everything written to stdout and stderr so far. */
  output(): string;
  /** Waits until the output satisfies `match`, within the test's own deadline. */
  waitForOutput(match: (text: string) => boolean, what: string, timeoutMs?: number): Promise<string>;
  hasExited(): boolean;
  /** Resolves with the exit code runc reports for the container's process. */
  exited: Promise<number>;
  /** Sends a signal to the container's process, as the kubelet does on deletion (SIGTERM). */
  kill(signal: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  /** Kills whatever is left and removes the container and its bundle. */
  remove(): Promise<void>;
}

/** Splits the image's KEY=value env and lays `env` over it, as the kubelet does. */
function mergedEnv(image: ImageConfig, env: Record<string, string>): string[] {
  const merged = new Map<string, string>();
  for (const entry of image.Env ?? []) {
    const at = entry.indexOf('=');
    if (at > 0) merged.set(entry.slice(0, at), entry.slice(at + 1));
  }
  for (const [key, value] of Object.entries(env)) merged.set(key, value);
  return [...merged].map(([key, value]) => `${key}=${value}`);
}

function volumeMount(volume: Volume): Record<string, unknown> {
  const options = ['rbind', 'nosuid', 'nodev', volume.readOnly === true ? 'ro' : 'rw'];
  return { destination: volume.mountPath, type: 'bind', source: volume.hostPath, options };
}

/** The OCI runtime spec for one container: what `runc run` is told. */
export function ociConfig(spec: ContainerSpec): Record<string, unknown> {
  const command = spec.command ?? spec.image.Entrypoint ?? [];
  const args = [...command, ...(spec.args ?? spec.image.Cmd ?? [])];
  if (args.length === 0) throw new Error('the container has no command');
  return {
    ociVersion: '1.0.2',
    process: {
      terminal: false,
      user: { uid: spec.uid, gid: spec.gid, additionalGids: [spec.gid] },
      args,
      env: mergedEnv(spec.image, spec.env ?? {}),
      cwd: spec.image.WorkingDir ?? '/',
      // capabilities: drop: [ALL]
      capabilities: { bounding: [], effective: [], inheritable: [], permitted: [], ambient: [] },
      noNewPrivileges: true,
    },
    root: { path: spec.rootfs, readonly: spec.readOnlyRoot },
    hostname: 'sandbox-injector-e2e',
    mounts: [
      { destination: '/proc', type: 'proc', source: 'proc' },
      {
        destination: '/dev',
        type: 'tmpfs',
        source: 'tmpfs',
        options: ['nosuid', 'strictatime', 'mode=755', 'size=65536k'],
      },
      {
        destination: '/dev/shm',
        type: 'tmpfs',
        source: 'shm',
        options: ['nosuid', 'noexec', 'nodev', 'mode=1777', 'size=65536k'],
      },
      { destination: '/sys', type: 'sysfs', source: 'sysfs', options: ['nosuid', 'noexec', 'nodev', 'ro'] },
      ...(spec.volumes ?? []).map(volumeMount),
    ],
    linux: {
      // No network namespace: the host's, loopback included.
      namespaces: [{ type: 'pid' }, { type: 'ipc' }, { type: 'uts' }, { type: 'mount' }],
      maskedPaths: ['/proc/kcore', '/proc/keys', '/proc/timer_list', '/sys/firmware'],
      readonlyPaths: ['/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'],
    },
  };
}

let sequence = 0;

/** Starts the container in the foreground of a `runc run`; its output is gathered as it comes. */
export function startContainer(spec: ContainerSpec): RunningContainer {
  const bundle = mkdtempSync(path.join(tmpdir(), 'si-e2e-oci-'));
  const id = `si-e2e-${process.pid}-${++sequence}`;
  for (const volume of spec.volumes ?? []) {
    // Mount points must exist in a root filesystem that is read-only once the container starts.
    mkdirSync(path.join(spec.rootfs, volume.mountPath), { recursive: true });
  }
  writeFileSync(path.join(bundle, 'config.json'), JSON.stringify(ociConfig(spec), null, 2));
  const runc = (args: string[]): Promise<unknown> => run('runc', args);
  const child: ChildProcess = spawn('runc', ['run', '--bundle', bundle, id], { stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  const appended = new EventEmitter();
  const append = (chunk: Buffer): void => {
    text += chunk.toString('utf8');
    appended.emit('data');
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  const exited = new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => resolve(code ?? (signal === null ? -1 : 128)));
  });
  let removed: Promise<void> | undefined;
  return {
    id,
    output: () => text,
    hasExited: () => child.exitCode !== null || child.signalCode !== null,
    async waitForOutput(match, what, timeoutMs = 60_000) {
      const signal = AbortSignal.timeout(timeoutMs);
      while (!match(text)) {
        if (child.exitCode !== null) throw new Error(`container exited (${child.exitCode}) before ${what}:\n${text}`);
        try {
          await Promise.race([once(appended, 'data', { signal }), exited]);
        } catch {
          throw new Error(`no ${what} within ${timeoutMs} ms; output:\n${text}`);
        }
      }
      return text;
    },
    exited,
    async kill(sig) {
      await runc(['kill', id, sig]);
    },
    remove: () =>
      (removed ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) {
          await runc(['kill', id, 'SIGKILL']).catch(() => undefined);
          await exited.catch(() => undefined);
        }
        await runc(['delete', '--force', id]).catch(() => undefined);
        rmSync(bundle, { recursive: true, force: true });
      })()),
  };
}

/** Runs a container to its end and returns its exit code and output. */
export async function runContainer(spec: ContainerSpec, timeoutMs = 60_000): Promise<{ code: number; output: string }> {
  const container = startContainer(spec);
  try {
    const timer = new Promise<never>((_, reject) =>
      setTimeout(
        () => reject(new Error(`container still running after ${timeoutMs} ms:\n${container.output()}`)),
        timeoutMs,
      ).unref(),
    );
    const code = await Promise.race([container.exited, timer]);
    return { code, output: container.output() };
  } finally {
    await container.remove();
  }
}
