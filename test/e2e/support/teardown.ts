// Taking a cluster down however the test process ends: stop() in the normal
// case, an `exit` handler when the process exits without it, and a detached
// watchdog when the process is killed outright and no handler runs.
import { spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { stopProcess, type ManagedProcess } from './processes.js';

// Clusters still running, so an exiting test process can take them down. A
// detached watchdog per cluster covers the case where the process is killed
// outright and no exit handler runs.
const liveClusters = new Set<{ killNow(): void }>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const c of liveClusters) c.killNow();
  });
}

const WATCHDOG = `
parent=$1; dir=$2
while kill -0 "$parent" 2>/dev/null; do sleep 1; done
if [ -f "$dir/pids" ]; then
  for p in $(cat "$dir/pids"); do
    if grep -qaF -- "$dir" "/proc/$p/cmdline" 2>/dev/null; then kill -9 "$p" 2>/dev/null; fi
  done
fi
rm -rf -- "$dir"
`;

export interface ClusterTeardown {
  /** The processes tracked so far, in the order they started. */
  readonly procs: readonly ManagedProcess[];
  /** Takes `proc` down with the cluster, and lists it in `<dir>/pids` for the watchdog. */
  track(proc: ManagedProcess): void;
  /**
   * Stops the tracked processes, the last started first (SIGKILL after `graceMs`), and stands down the exit
   * handler and the watchdog. The dir is the caller's to remove or keep.
   */
  stopAll(graceMs: number): Promise<void>;
}

/** Starts the watchdog for `dir` and registers the cluster with the exit handler; call before starting anything. */
export function guardCluster(dir: string): ClusterTeardown {
  const watchdog = spawn('sh', ['-c', WATCHDOG, 'sandbox-injector-e2e-watchdog', String(process.pid), dir], {
    detached: true,
    stdio: 'ignore',
  });
  watchdog.unref();
  const procs: ManagedProcess[] = [];
  const killNow = (): void => {
    for (const p of procs) if (p.exit === undefined) p.child.kill('SIGKILL');
    if (watchdog.exitCode === null) watchdog.kill('SIGKILL');
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // A process killed a moment ago may still be writing; the watchdog is gone
      // too, so this is best effort.
    }
  };
  const handle = { killNow };
  liveClusters.add(handle);
  installExitHook();
  return {
    procs,
    track(proc: ManagedProcess): void {
      procs.push(proc);
      writeFileSync(path.join(dir, 'pids'), procs.map((p) => `${p.child.pid ?? ''}\n`).join(''));
    },
    async stopAll(graceMs: number): Promise<void> {
      for (const p of procs.slice().reverse()) await stopProcess(p, graceMs);
      liveClusters.delete(handle);
      if (watchdog.exitCode === null) watchdog.kill('SIGKILL');
    },
  };
}
