/**
 * The ways a wrapper can wait that the wrapper bench sets side by side: the shipped run_with_envs.sh with its
 * FIFO and without one (two poll intervals), a blocked read as the floor, and the wrapper as it was before it
 * waited on a descriptor; and how to know each has reached its wait.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { waitUntilWaiting } from '../../test/wrapper/run-wrapper.js';
import { statFields } from '../../harness/proc.js';
import { ROOT, repoPath } from '../../harness/repo.js';

export const WRAPPER = repoPath('src/wrapper/run_with_envs.sh');
/** The wrapper as it was before it waited on a descriptor: `sleep 0.1` in a loop. */
const BEFORE_COMMIT = '1826c21';

export interface Way {
  name: string;
  script: string;
  /**
   * A folder at .env_wake: no FIFO can be made, so the wrapper falls back to /dev/ptmx. Not a plain file: a
   * wrapper run as root replaces that with its FIFO (docs/env-file.md), and `rm -f` leaves a folder alone.
   */
  plainWakeFile: boolean;
  /** How to know it is in its wait: its descriptor, or a sleep child. */
  waits: 'descriptor' | 'sleep-child';
  wake: boolean;
  /** Never ends its wait: the idle floor only. */
  reference?: true;
}

/** The ways, their scripts written into `work`. */
export function ways(work: string): Way[] {
  const current = readFileSync(WRAPPER, 'utf8');
  const fastPoll = path.join(work, 'fast-poll.sh');
  writeFileSync(fastPoll, current.replace(/^fallback_poll_seconds=.*$/m, 'fallback_poll_seconds=0.01'));
  const list: Way[] = [
    { name: 'FIFO + wake (chosen)', script: WRAPPER, plainWakeFile: false, waits: 'descriptor', wake: true },
    { name: 'no FIFO: read -t 0.1', script: WRAPPER, plainWakeFile: true, waits: 'descriptor', wake: false },
    { name: 'no FIFO: read -t 0.01', script: fastPoll, plainWakeFile: true, waits: 'descriptor', wake: false },
  ];
  const blocked = path.join(work, 'blocked.sh');
  writeFileSync(blocked, 'exec {fd}<>/dev/ptmx\nread -r -u "$fd" _\n');
  list.push({
    name: 'reference: blocked read',
    script: blocked,
    plainWakeFile: false,
    waits: 'descriptor',
    wake: false,
    reference: true,
  });
  try {
    const before = path.join(work, 'before.sh');
    writeFileSync(before, execFileSync('git', ['-C', ROOT, 'show', `${BEFORE_COMMIT}:src/wrapper/run_with_envs.sh`]));
    list.push({ name: 'before: sleep 0.1', script: before, plainWakeFile: false, waits: 'sleep-child', wake: false });
  } catch {
    process.stdout.write(`  (no git history here: the "before" wrapper, ${BEFORE_COMMIT}, is left out)\n`);
  }
  return list;
}

export async function inWait(way: Way, pid: number, dir: string): Promise<void> {
  if (way.waits === 'descriptor') {
    await waitUntilWaiting(pid, dir, 60_000);
    return;
  }
  // A sleep reaped: the faults of reaped children (cminflt) grow. Cheaper to watch than the whole of /proc.
  const reapedFaults = () => Number(statFields(readFileSync(`/proc/${pid}/stat`, 'utf8'))[8]);
  const start = reapedFaults();
  const deadline = Date.now() + 60_000;
  while (reapedFaults() === start) {
    if (Date.now() > deadline) throw new Error(`wrapper ${pid} never reaped a sleep`);
    await sleep(5);
  }
}
