/**
 * The wrapper bench's idle cost: `count` wrappers of one way waiting for `seconds`, their CPU from
 * /proc/PID/stat (user + system, with the children they reaped), and the processes started meanwhile, counted
 * as PIDs allocated in a PID namespace of their own (unshare), else system-wide.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { childrenOf } from '../../test/wrapper/run-wrapper.js';
import { CLOCK_TICKS, statFields } from '../../harness/proc.js';
import { inWait, type Way } from './ways.js';

/** utime + stime + cutime + cstime, in seconds. */
function cpuSeconds(pid: number): number {
  const fields = statFields(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  return [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i]), 0) / CLOCK_TICKS;
}

/** Lines from a child's stdout, one at a time. */
function lines(child: ChildProcess): () => Promise<string> {
  let buffered = '';
  const waiting: ((line: string) => void)[] = [];
  const ready: string[] = [];
  child.stdout?.on('data', (chunk: Buffer) => {
    buffered += chunk.toString('utf8');
    for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      const taker = waiting.shift();
      if (taker === undefined) ready.push(line);
      else taker(line);
    }
  });
  return () => {
    const line = ready.shift();
    return line !== undefined ? Promise.resolve(line) : new Promise((resolve) => waiting.push(resolve));
  };
}

// Starts n wrappers, then on each line read prints the last PID allocated in its PID namespace.
const HARNESS = `
script=$1 n=$2 base=$3 plain=$4
for ((i = 0; i < n; i++)); do
  mkdir -p "$base/$i"
  if [ "$plain" = 1 ]; then mkdir "$base/$i/.env_wake"; fi
  SANDBOX_ENV_DIR="$base/$i" bash "$script" -- true < /dev/null &
done
echo started
while read -r _; do read -r last < /proc/sys/kernel/ns_last_pid; echo "$last"; done
kill -TERM $(jobs -p)
wait
`;

export interface Idle {
  way: string;
  cpuSeconds: number;
  coreShare: number;
  processesStarted: number;
  counted: 'PID namespace' | 'system-wide';
}

function systemForks(): number {
  const match = /^processes (\d+)$/m.exec(readFileSync('/proc/stat', 'utf8'));
  return Number(match?.[1]);
}

/** `count` wrappers of `way` waiting for `seconds`, in a PID namespace of their own when `isolated`. */
export async function idle(way: Way, isolated: boolean, count: number, seconds: number, work: string): Promise<Idle> {
  const base = mkdtempSync(path.join(work, 'idle-'));
  const args = ['-c', HARNESS, 'harness', way.script, String(count), base, way.plainWakeFile ? '1' : '0'];
  const child = isolated
    ? spawn('unshare', ['--pid', '--fork', '--', 'bash', ...args], { stdio: ['pipe', 'pipe', 'inherit'] })
    : spawn('bash', args, { stdio: ['pipe', 'pipe', 'inherit'] });
  const next = lines(child);
  try {
    if ((await next()) !== 'started') throw new Error('harness did not start');
    const harness = isolated ? ((await childrenOf(child.pid ?? -1))[0] ?? -1) : (child.pid ?? -1);
    let wrappers: number[] = [];
    for (const deadline = Date.now() + 60_000; wrappers.length < count; wrappers = await childrenOf(harness)) {
      if (Date.now() > deadline) throw new Error(`${wrappers.length} of ${count} wrappers started`);
      await sleep(20);
    }
    for (const [i, pid] of wrappers.entries()) await inWait(way, pid, path.join(base, String(i)));
    const cpuBefore = wrappers.reduce((sum, pid) => sum + cpuSeconds(pid), 0);
    const forksBefore = systemForks();
    child.stdin?.write('\n');
    const pidBefore = Number(await next());
    await sleep(seconds * 1000);
    const cpuAfter = wrappers.reduce((sum, pid) => sum + cpuSeconds(pid), 0);
    child.stdin?.write('\n');
    const pidAfter = Number(await next());
    const forksAfter = systemForks();
    return {
      way: way.name,
      cpuSeconds: cpuAfter - cpuBefore,
      coreShare: (cpuAfter - cpuBefore) / seconds,
      processesStarted: isolated ? pidAfter - pidBefore : forksAfter - forksBefore,
      counted: isolated ? 'PID namespace' : 'system-wide',
    };
  } finally {
    child.stdin?.end();
    await new Promise((resolve) => (child.exitCode !== null ? resolve(null) : child.on('close', resolve)));
    rmSync(base, { recursive: true, force: true });
  }
}

export async function canUnshare(): Promise<boolean> {
  const probe = spawn('unshare', ['--pid', '--fork', '--', 'bash', '-c', 'exit 0'], { stdio: 'ignore' });
  return new Promise((resolve) => {
    probe.on('error', () => resolve(false));
    probe.on('close', (code) => resolve(code === 0));
  });
}
