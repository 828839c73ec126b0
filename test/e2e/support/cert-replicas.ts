// Certificate replicas as separate Node processes (cert-replica-main.ts). The e2e config runs TypeScript
// through vitest only, so the replica and what it imports are compiled once with the project's tsc into a
// folder under node_modules/.cache (inside the repo, so `@kubernetes/client-node` and the other packages
// resolve from the repo's node_modules).
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from './binaries.js';
import {
  REPLICA_CONFIG_ENV,
  isReplicaMessage,
  type ReplicaCommand,
  type ReplicaConfig,
  type ReplicaLog,
} from './cert-replica-protocol.js';

/** A command without its id (Omit over each member of the union, not over the union as a whole). */
type CommandBody = ReplicaCommand extends infer C ? (C extends unknown ? Omit<C, 'id'> : never) : never;

export interface CompiledReplica {
  mainJs: string;
  remove(): void;
}

/** Compiles cert-replica-main.ts and its imports (src/certs, src/kube-client) to plain ES modules. */
export async function compileReplica(): Promise<CompiledReplica> {
  const cacheDir = path.join(repoRoot, 'node_modules', '.cache');
  mkdirSync(cacheDir, { recursive: true });
  const outDir = mkdtempSync(path.join(cacheDir, 'sandbox-injector-cert-replica-'));
  const entry = path.join(repoRoot, 'test', 'e2e', 'support', 'cert-replica-main.ts');
  const tsc = path.join(repoRoot, 'node_modules', 'typescript-7', 'bin', 'tsc');
  const args = [
    tsc,
    // The file named below is the whole program: the repository's tsconfig.json is not this compile's.
    '--ignoreConfig',
    '--outDir',
    outDir,
    '--rootDir',
    repoRoot,
    '--module',
    'nodenext',
    '--moduleResolution',
    'nodenext',
    '--target',
    'es2022',
    '--strict',
    '--skipLibCheck',
    '--esModuleInterop',
    '--types',
    'node',
    entry,
  ];
  const output = await new Promise<{ code: number | null; text: string }>((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, text }));
  });
  if (output.code !== 0) {
    rmSync(outDir, { recursive: true, force: true });
    throw new Error(`compiling the certificate replica failed:\n${output.text}`);
  }
  // The emitted files are ES modules; say so next to them rather than rely on the repo's package.json.
  writeFileSync(path.join(outDir, 'package.json'), '{"type":"module"}\n');
  return {
    mainJs: path.join(outDir, 'test', 'e2e', 'support', 'cert-replica-main.js'),
    remove: () => rmSync(outDir, { recursive: true, force: true }),
  };
}

export interface Replica {
  readonly name: string;
  readonly dir: string;
  readonly logs: ReplicaLog[];
  /** Resolves when the replica reports ready; rejects if it exits first. */
  readonly ready: Promise<void>;
  renew(rotateCa?: boolean): Promise<void>;
  setClockOffset(offsetMs: number): Promise<void>;
  /** Asks the replica to stop and waits for its exit; kills it if it does not exit in time. */
  stop(): Promise<void>;
  /** The log, one line per entry, for failure messages. */
  describeLogs(): string;
}

export function startReplica(mainJs: string, name: string, config: ReplicaConfig): Replica {
  const child: ChildProcess = fork(mainJs, [], {
    env: { ...process.env, [REPLICA_CONFIG_ENV]: JSON.stringify(config) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const logs: ReplicaLog[] = [];
  const pending = new Map<number, { resolve: () => void; reject: (error: Error) => void }>();
  let nextId = 1;
  let exited = false;
  const exit = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      exited = true;
      const why = new Error(`replica ${name} exited (${signal ?? String(code)})`);
      for (const waiter of pending.values()) waiter.reject(why);
      pending.clear();
      resolve();
    });
  });
  const ready = new Promise<void>((resolve, reject) => {
    child.on('message', (message: unknown) => {
      if (!isReplicaMessage(message)) return;
      if (message.type === 'ready') resolve();
      else if (message.type === 'log') logs.push({ level: message.level, msg: message.msg, fields: message.fields });
      else {
        const waiter = pending.get(message.id);
        pending.delete(message.id);
        if (message.ok) waiter?.resolve();
        else waiter?.reject(new Error(`replica ${name}: ${message.error ?? 'failed'}`));
      }
    });
    void exit.then(() => reject(new Error(`replica ${name} exited before it was ready`)));
  });
  // A test that fails before awaiting `ready` must not turn the exit into an unhandled rejection.
  ready.catch(() => undefined);

  const command = (body: CommandBody): Promise<void> => {
    if (exited) return Promise.reject(new Error(`replica ${name} has exited`));
    const id = nextId++;
    return new Promise<void>((resolve, reject) => {
      pending.set(id, { resolve, reject });
      child.send({ ...body, id });
    });
  };

  return {
    name,
    dir: config.dir,
    logs,
    ready,
    renew: (rotateCa = false) => command({ cmd: 'renew', rotateCa }),
    setClockOffset: (offsetMs) => command({ cmd: 'clock', offsetMs }),
    async stop() {
      if (!exited) {
        await command({ cmd: 'stop' }).catch(() => undefined);
        const timeout = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), 10_000).unref());
        if ((await Promise.race([exit.then(() => 'exited' as const), timeout])) === 'timeout') child.kill('SIGKILL');
      }
      await exit;
    },
    describeLogs: () => logs.map((l) => `${name} ${l.level} ${l.msg} ${JSON.stringify(l.fields)}`).join('\n'),
  };
}
