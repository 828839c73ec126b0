/** The real built server (`node dist/cli/main.js serve`) as a child process, its JSON log lines parsed. */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';

export const MAIN = new URL('../../../dist/cli/main.js', import.meta.url).pathname;

export interface ChildServer {
  child: ChildProcess;
  port: number;
  logs: Record<string, unknown>[];
  stderr(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves with the first log line whose msg is `message`. */
  logged(message: string): Promise<Record<string, unknown>>;
}

export async function spawnServer(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<ChildServer> {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build first`);
  const child = spawn(process.execPath, [MAIN, 'serve', ...args], {
    cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: Record<string, unknown>[] = [];
  const waiters: { message: string; resolve: (line: Record<string, unknown>) => void }[] = [];
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  // 'close', not 'exit': it comes once stdout has ended, so every log line the process wrote is in `logs`.
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal })),
  );
  if (child.stdout !== null) {
    createInterface({ input: child.stdout }).on('line', (text) => {
      const line = JSON.parse(text) as Record<string, unknown>;
      logs.push(line);
      for (const waiter of waiters.filter((w) => w.message === line.msg)) waiter.resolve(line);
    });
  }
  const logged = (message: string): Promise<Record<string, unknown>> => {
    const seen = logs.find((line) => line.msg === message);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve) => waiters.push({ message, resolve }));
  };

  const listening = await Promise.race([
    logged('listening'),
    exited.then(({ code }) => {
      throw new Error(`server exited with ${String(code)} before listening: ${stderr}`);
    }),
  ]);
  const address = listening.address as { port: number };
  return { child, port: address.port, logs, stderr: () => stderr, exited, logged };
}
