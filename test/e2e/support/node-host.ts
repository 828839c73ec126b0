// What a node changes on this machine outside its own folder, recorded before it starts so that the test can put
// it back and then show that nothing is left: the kernel settings the kubelet sets when it starts, the fixed
// paths that kubelet, containerd and the shims create whatever they are told, the cgroups of the containers,
// the mounts, and the processes.
import { existsSync, readdirSync, readFileSync, rmSync, rmdirSync, statSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';

/** The sysctls the kubelet sets at start (vm.overcommit_memory=1, kernel.panic=10, kernel.panic_on_oops=1). */
export const KERNEL_SETTINGS = ['vm/overcommit_memory', 'kernel/panic', 'kernel/panic_on_oops'] as const;

/**
 * Paths that cannot be pointed into the test's folder: the kubelet's device-plugin folder (a constant), the
 * shims' socket folder, NRI's socket folder (made before the NRI plugin reads `disable`), the default pod-log
 * and container-log folders. For each, the outermost folder that did not exist before is removed afterwards.
 */
export const FIXED_PATHS = [
  '/var/lib/kubelet/device-plugins',
  '/var/log/pods',
  '/var/log/containers',
  '/run/containerd/s',
  '/run/nri',
  '/opt/containerd',
] as const;

const CGROUP_ROOT = '/sys/fs/cgroup';

export type KernelSettings = Record<string, string>;

export function readKernelSettings(): KernelSettings {
  return Object.fromEntries(
    KERNEL_SETTINGS.map((key) => [key, readFileSync(`/proc/sys/${key}`, 'utf8').trim()] as const),
  );
}

export function writeKernelSettings(settings: KernelSettings): void {
  for (const [key, value] of Object.entries(settings)) {
    if (readFileSync(`/proc/sys/${key}`, 'utf8').trim() !== value) writeFileSync(`/proc/sys/${key}`, `${value}\n`);
  }
}

/** Every cgroup folder of every hierarchy, down to `depth` levels (containers sit at one or two). */
export function cgroupDirs(depth = 3): Set<string> {
  const found = new Set<string>();
  const walk = (dir: string, left: number): void => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      if (!entry.isDirectory()) continue;
      const child = path.join(dir, entry.name);
      found.add(child);
      if (left > 1) walk(child, left - 1);
    }
  };
  for (const hierarchy of readdirSync(CGROUP_ROOT, { withFileTypes: true })) {
    // Hybrid hosts link cpu and cpuacct to cpu,cpuacct: walk each real folder once.
    if (hierarchy.isDirectory()) walk(path.join(CGROUP_ROOT, hierarchy.name), depth);
  }
  return found;
}

export function mountPoints(): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => (line.split(' ')[4] ?? '').replace(/\\040/g, ' '));
}

/** Pids of the processes whose command line mentions `marker` (the node's folder). */
export function processesMentioning(marker: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(marker)) pids.push(Number(name));
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}

export interface HostSnapshot {
  kernel: KernelSettings;
  cgroups: Set<string>;
  mounts: Set<string>;
  /** The outermost missing ancestor of each fixed path, which the node may create. */
  created: string[];
}

export function snapshotHost(): HostSnapshot {
  const created: string[] = [];
  for (const fixed of FIXED_PATHS) {
    let missing: string | undefined;
    for (let p: string = fixed; p !== '/'; p = path.dirname(p)) if (!existsSync(p)) missing = p;
    if (missing !== undefined && !created.includes(missing)) created.push(missing);
  }
  return { kernel: readKernelSettings(), cgroups: cgroupDirs(), mounts: new Set(mountPoints()), created };
}

/** What the node left on the machine, compared with the snapshot: empty lists and no settings mean clean. */
export interface Leftovers {
  processes: number[];
  mounts: string[];
  cgroups: string[];
  paths: string[];
  kernel: Record<string, { was: string; now: string }>;
}

export function leftovers(before: HostSnapshot, dir: string): Leftovers {
  const now = readKernelSettings();
  const kernel: Leftovers['kernel'] = {};
  for (const [key, was] of Object.entries(before.kernel)) {
    if (now[key] !== was) kernel[key] = { was, now: now[key] ?? '' };
  }
  return {
    processes: processesMentioning(dir),
    mounts: mountPoints().filter((m) => !before.mounts.has(m)),
    cgroups: [...cgroupDirs()].filter((c) => !before.cgroups.has(c)),
    paths: before.created.filter((p) => existsSync(p)),
    kernel,
  };
}

function killCgroup(dir: string): void {
  try {
    for (const pid of readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean)) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        // Exited meanwhile.
      }
    }
  } catch {
    // Not a cgroup folder any more.
  }
}

/**
 * Takes away what the node left after its processes were asked to stop: processes, then mounts (lazily, the
 * deepest first), cgroups (the deepest first, once their processes are gone), the fixed paths it created, and
 * the kernel settings. Safe to call more than once.
 */
export function restoreHost(before: HostSnapshot, dir: string): void {
  for (const pid of processesMentioning(dir)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Exited meanwhile.
    }
  }
  const newCgroups = [...cgroupDirs()].filter((c) => !before.cgroups.has(c)).sort((a, b) => b.length - a.length);
  for (const cgroup of newCgroups) killCgroup(cgroup);
  for (const mount of mountPoints()
    .filter((m) => !before.mounts.has(m))
    .sort((a, b) => b.length - a.length)) {
    try {
      execFileSync('umount', ['-l', mount], { stdio: 'ignore' });
    } catch {
      // Already gone with its parent.
    }
  }
  for (const cgroup of newCgroups) {
    for (let attempt = 0; attempt < 50 && existsSync(cgroup); attempt++) {
      try {
        rmdirSync(cgroup);
      } catch {
        // Its last process may still be exiting; SIGKILLed above, it goes within moments.
        killCgroup(cgroup);
        execFileSync('sleep', ['0.1']);
      }
    }
  }
  for (const created of before.created) {
    if (existsSync(created) && statSync(created).isDirectory()) rmSync(created, { recursive: true, force: true });
  }
  writeKernelSettings(before.kernel);
}
