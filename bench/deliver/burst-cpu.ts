/**
 * Where the CPU of the 200 claims at once goes: how busy the whole machine was over the burst (/proc/stat), the
 * time on a CPU of each process that shares its cores (all threads' schedstat): the controller,
 * kube-apiserver, etcd and this process (the envd doubles, the claims); and the wrappers with their apps, from
 * the cgroup they run in (cpu-group.ts), since they exec and exit within the burst and /proc loses what an
 * exited process ran. What is left is the kernel's own work and anything else on the machine. When the machine
 * is busy through the burst, it is bound by the cores, and no one process is the next bottleneck by itself.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import type { CpuGroup } from '../cpu-group.js';
import { CLOCK_TICKS, statFields } from '../../harness/proc.js';

/** CPU seconds by what spent them. */
export type CpuByPart = Record<string, number>;

/**
 * CPU seconds a live process has run, all its threads: the first field of each thread's schedstat, in
 * nanoseconds. Its stat's utime and stime are whole clock ticks, and a waiting wrapper that ran 4 ms reads 0.
 */
function ranSeconds(pid: number | string): number {
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return 0;
  }
  let ns = 0;
  for (const task of tasks) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return ns / 1e9;
}

/** The machine's CPU seconds so far, all cores, from /proc/stat's first line. */
function machineSeconds(): { busy: number; idle: number; stolen: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = line
    .split(/\s+/)
    .slice(1)
    .map(Number);
  return {
    busy: (user + nice + system + irq + softirq) / CLOCK_TICKS,
    idle: (idle + iowait) / CLOCK_TICKS,
    stolen: steal / CLOCK_TICKS,
  };
}

/** This process's children named `comm` (kube-apiserver and etcd are started by the cluster helper). */
function childrenNamed(comm: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const parent = Number(statFields(readFileSync(`/proc/${entry}/stat`, 'utf8'))[1]);
      if (parent === process.pid && readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === comm)
        found.push(Number(entry));
    } catch {
      // gone between the listing and the read
    }
  }
  return found;
}

export interface BurstCpuResult {
  wallSeconds: number;
  cores: number;
  /** What the whole machine did meanwhile, in CPU seconds: busy (any process, the kernel), idle, stolen. */
  machine: { busy: number; idle: number; stolen: number };
  /** The named processes' share of the busy time, and the wrappers' and apps' when their cgroup could be made. */
  parts: CpuByPart;
  /** Why the wrappers and apps are not among the parts (then they are in the rest). */
  wrappersUnmeasured?: string;
}

export interface BurstCpu {
  stop(): BurstCpuResult;
}

const WRAPPERS = 'the wrappers and their apps';
// Named once, as both the parts and the per-claim line use them; kube-apiserver's and etcd's are also their
// processes' names.
const CONTROLLER = 'deliver-env';
const APISERVER = 'kube-apiserver';
const ETCD = 'etcd';
/** The parts a cluster runs apart from the sandboxes: the controller and the control plane. */
const CONTROL_PATH = [CONTROLLER, APISERVER, ETCD];

/** Starts counting: `controllerPid` is deliver-env's, `wrappers` the cgroup the wrappers were started in. */
export function startBurstCpu(controllerPid: number, wrappers: CpuGroup | { unavailable: string }): BurstCpu {
  const pids: Record<string, number[]> = {
    [CONTROLLER]: [controllerPid],
    'bench (envd doubles, claims)': [process.pid],
    [APISERVER]: childrenNamed(APISERVER),
    [ETCD]: childrenNamed(ETCD),
  };
  const read = (): CpuByPart => ({
    ...Object.fromEntries(
      Object.entries(pids).map(([part, list]) => [part, list.reduce((sum, pid) => sum + ranSeconds(pid), 0)]),
    ),
    ...('unavailable' in wrappers ? {} : { [WRAPPERS]: wrappers.seconds() }),
  });
  const before = read();
  const machineBefore = machineSeconds();
  const startedAt = performance.now();
  return {
    stop() {
      const after = read();
      const machineAfter = machineSeconds();
      const parts: CpuByPart = {};
      for (const [part, seconds] of Object.entries(after)) parts[part] = seconds - (before[part] ?? 0);
      return {
        wallSeconds: (performance.now() - startedAt) / 1000,
        cores: availableParallelism(),
        machine: {
          busy: machineAfter.busy - machineBefore.busy,
          idle: machineAfter.idle - machineBefore.idle,
          stolen: machineAfter.stolen - machineBefore.stolen,
        },
        parts,
        ...('unavailable' in wrappers ? { wrappersUnmeasured: wrappers.unavailable } : {}),
      };
    },
  };
}

export function burstCpuLine(result: BurstCpuResult): string {
  const { machine } = result;
  const total = machine.busy + machine.idle + machine.stolen;
  const named = Object.values(result.parts).reduce((sum, seconds) => sum + seconds, 0);
  const parts = Object.entries(result.parts)
    .map(([part, seconds]) => `${part} ${seconds.toFixed(2)}`)
    .join(', ');
  return (
    `  CPU from the claims sent to the last app started (${result.wallSeconds.toFixed(2)} s on ${result.cores} cores): ` +
    `machine busy ${((100 * machine.busy) / total).toFixed(0)}% (${machine.busy.toFixed(2)} CPU-s busy, ` +
    `${machine.idle.toFixed(2)} idle, ${machine.stolen.toFixed(2)} stolen); of it ${parts}, ` +
    `the rest (${result.wrappersUnmeasured === undefined ? 'the kernel, anything else' : `the wrappers and apps, unmeasured: ${result.wrappersUnmeasured}; the kernel`}) ${Math.max(0, machine.busy - named).toFixed(2)} CPU-s\n`
  );
}

/**
 * The burst's CPU divided by its claims, by part. A burst bound by the cores grows with its size at about this
 * cost over the cores, so the per-claim figures say how many claims at once a machine can start within a bound.
 * Beside it, the control path's own share over the cores: what the burst would take of them if the sandboxes'
 * side (the envd doubles, the wrappers and apps) and the claimer ran elsewhere, as in a cluster.
 */
export function perClaimLine(result: BurstCpuResult, claims: number): string {
  const ms = (seconds: number): string => ((1000 * seconds) / claims).toFixed(1);
  const parts = Object.entries(result.parts)
    .map(([part, seconds]) => `${part} ${ms(seconds)}`)
    .join(', ');
  const control = CONTROL_PATH.reduce((sum, part) => sum + (result.parts[part] ?? 0), 0);
  return (
    `  per claim: ${ms(result.machine.busy)} ms of CPU busy (${parts}); ` +
    `${CONTROL_PATH.join(', ')} alone: ${ms(control)} ms a claim, ${(control / result.cores).toFixed(2)} s of ${result.cores} cores for the ${claims}\n`
  );
}
