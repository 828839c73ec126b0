/** What Linux's /proc says about a process: its stat fields, the CPU time it has used, its memory lines. */
import { readFile } from 'node:fs/promises';

export const CLOCK_TICKS = 100; // USER_HZ on Linux

/**
 * The fields of a /proc/PID/stat line after "pid (comm) ": [0] the state, [1] the parent's PID, [8] cminflt,
 * [11] to [14] utime, stime, cutime and cstime. The comm may hold spaces and parentheses, hence the last ')'.
 */
export function statFields(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** CPU time (user + system) of a stat line's process, its own and not its children's, in ms. */
export function statCpuMs(stat: string): number {
  const fields = statFields(stat);
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}

/** CPU time (user + system) a process has used so far, in ms; undefined once it has exited. */
export async function cpuMs(pid: number): Promise<number | undefined> {
  try {
    return statCpuMs(await readFile(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

/** A `Name:  N kB` line of /proc/PID/status (VmRSS, VmHWM), in KiB; 0 when the line is missing. */
export function statusKiB(status: string, field: string): number {
  return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
}

/** A live process's resident memory now and at its peak so far (VmRSS, VmHWM), in MiB. */
export async function memoryMiB(pid: number): Promise<{ rss: number; peak: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return { rss: statusKiB(status, 'VmRSS') / 1024, peak: statusKiB(status, 'VmHWM') / 1024 };
}
