/**
 * The CPU time of a group of processes, their exited ones included: a cgroup of the `cpu` controller (v2) or
 * of `cpuacct` (v1), which counts every task that ran in it, whether it still lives or not. /proc cannot: a
 * process's own time goes with it when it exits, and what a reaped child spent reaches its parent with the
 * whole of its life. The benches use it for the wrappers and their apps, which exec and exit inside the figure.
 * Making a cgroup needs root (or a delegated hierarchy); without one, `cpuGroup` says why and the bench prints
 * the figure as not measured.
 */
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { errorCode } from '../src/errors/error-message.js';

export interface CpuGroup {
  /** Moves a process into the group; what it and its children run from then on is counted. */
  add(pid: number): void;
  /** CPU seconds every task of the group has run so far. */
  seconds(): number;
  /** Removes the group once its processes have exited (a group with live tasks stays; it holds no resource). */
  remove(): void;
}

const V2_ROOT = '/sys/fs/cgroup';
const V1_CPUACCT = '/sys/fs/cgroup/cpuacct';

/** A new cgroup named `name`-PID, or the reason there is none. */
export function cpuGroup(name: string): CpuGroup | { unavailable: string } {
  const leaf = `${name}-${process.pid}`;
  // v2: the unified hierarchy at the root; the root's cpu.stat exists whether or not `cpu` is delegated.
  const v2 = existsSync(path.join(V2_ROOT, 'cgroup.controllers'));
  const dir = v2 ? path.join(V2_ROOT, leaf) : path.join(V1_CPUACCT, leaf);
  if (!v2 && !existsSync(path.join(V1_CPUACCT, 'cpuacct.usage')))
    return { unavailable: 'no cgroup v2 and no v1 cpuacct hierarchy' };
  try {
    mkdirSync(dir);
  } catch (error) {
    return { unavailable: `cannot make ${dir}: ${errorCode(error) ?? String(error)}` };
  }
  const seconds = v2
    ? () => Number(/^usage_usec (\d+)$/m.exec(readFileSync(path.join(dir, 'cpu.stat'), 'utf8'))?.[1]) / 1e6
    : () => Number(readFileSync(path.join(dir, 'cpuacct.usage'), 'utf8')) / 1e9;
  return {
    add: (pid) => writeFileSync(path.join(dir, 'cgroup.procs'), String(pid)),
    seconds,
    remove: () => {
      try {
        rmdirSync(dir);
      } catch {
        // still has tasks, or gone: nothing to free
      }
    },
  };
}
