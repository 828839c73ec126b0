/** The real built server (`node dist/cli/main.js serve`) as a child process, its JSON log lines parsed. */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { waitUntil } from '../../support/wait-until.js';

export const MAIN = new URL('../../../dist/cli/main.js', import.meta.url).pathname;

export interface ChildServer {
  child: ChildProcess;
  port: number;
  logs: Record<string, unknown>[];
  stderr(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves with the first log line whose msg is `message`; fails if none comes within `timeoutMs`. */
  logged(message: string, timeoutMs?: number): Promise<Record<string, unknown>>;
}

export async function spawnServer(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<ChildServer> {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build first`);
  const child = spawn(process.execPath, [MAIN, 'serve', ...args], {
    cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: Record<string, unknown>[] = [];
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  // 'close', not 'exit': it comes once stdout has ended, so every log line the process wrote is in `logs`.
  let closed: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (code, signal) => resolve((closed = { code, signal }))),
  );
  if (child.stdout !== null) {
    createInterface({ input: child.stdout }).on('line', (text) =>
      logs.push(JSON.parse(text) as Record<string, unknown>),
    );
  }
  const logged = (message: string, timeoutMs = 20_000): Promise<Record<string, unknown>> =>
    waitUntil(() => logs.find((line) => line.msg === message), {
      what: `a "${message}" log line`,
      timeoutMs,
      giveUp: () =>
        closed === undefined
          ? undefined
          : new Error(`server exited with ${String(closed.code)} before logging "${message}": ${stderr}`),
      detail: () => stderr,
    });

  const listening = await logged('listening');
  const address = listening.address as { port: number };
  return { child, port: address.port, logs, stderr: () => stderr, exited, logged };
}
