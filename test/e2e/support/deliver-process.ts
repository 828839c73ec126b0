// `sandbox-injector deliver-env` as a separate process against the e2e cluster, its JSON log lines gathered.
import { spawn, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import path from 'node:path';
import { waitUntil } from '../../support/wait-until.js';
import { repoRoot } from './binaries.js';
import type { TestCluster } from './cluster.js';
import { JsonLog } from './json-log.js';
import { terminate } from './processes.js';

const CLI = path.join(repoRoot, 'dist', 'cli', 'main.js');

export interface DeliverProcess {
  identity: string;
  /** Every log line so far, across restarts. */
  logs: Record<string, unknown>[];
  /** The metrics port of the current run. */
  metricsPort(): number;
  logged(
    match: (line: Record<string, unknown>) => boolean,
    what: string,
    count?: number,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>[]>;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Sends `signal` to the running process (SIGSTOP freezes it, SIGCONT thaws it). */
  signal(signal: NodeJS.Signals): void;
}

/** `kubeconfigPath` defaults to the cluster admin's; the tests pass the component's service account. */
export async function startDeliverProcess(
  cluster: TestCluster,
  identity: string,
  extraArgs: string[],
  kubeconfigPath = cluster.kubeconfigPath,
): Promise<DeliverProcess> {
  const log = new JsonLog(identity);
  const logs = log.lines;
  let child: ChildProcess | undefined;
  let port = 0;
  const logged: DeliverProcess['logged'] = (match, what, count = 1, timeoutMs = 30_000) =>
    log.logged(match, what, count, timeoutMs);

  const start = async (): Promise<void> => {
    const runStart = logs.length;
    const args = [
      CLI,
      'deliver-env',
      '--kubeconfig',
      kubeconfigPath,
      '--host',
      '127.0.0.1',
      '--metrics-port',
      '0',
      '--identity',
      identity,
      '--log-level',
      'debug',
      ...extraArgs,
    ];
    const proc = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child = proc;
    log.attach(proc);
    const [started] = await logged(
      (l, i = logs.indexOf(l)) => i >= runStart && l.msg === 'deliver-env started',
      'started',
    );
    port = Number(started?.metricsPort);
    await waitUntil(() => status(port, '/readyz'), {
      what: `${identity} to answer /readyz with 200`,
      timeoutMs: 60_000,
      intervalMs: 100,
      until: (code) => code === 200,
      giveUp: () => (proc.exitCode === null ? undefined : new Error(`${identity} exited with ${proc.exitCode}`)),
    });
  };

  const stop = (): Promise<void> => {
    // A frozen process would keep SIGTERM pending for ever.
    child?.kill('SIGCONT');
    return terminate(child);
  };

  await start();
  return {
    identity,
    logs,
    metricsPort: () => port,
    logged,
    start,
    stop,
    signal: (signal) => void child?.kill(signal),
  };
}

export function status(port: number, urlPath: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: urlPath }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve(0));
    req.end();
  });
}

export function metricsText(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/metrics' }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      res.on('end', () => resolve(text));
    });
    req.on('error', reject);
    req.end();
  });
}
