/** Starting the servers under test, talking to them once, and reading their CPU and memory from /proc. */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TLSSocket } from 'node:tls';
import { statCpuMs, statusKiB } from '../harness/proc.js';
import { repoPath } from '../harness/repo.js';
import { serveArgs } from '../harness/serve.js';

const CONFIG_CASE = repoPath('test/fixtures/conformance/01-agent-runtime-basic.json');

/** Seconds from a field of bash's `times` builtin, such as 0m0.512s; NaN for anything else. */
export function timesSeconds(field: string): number {
  const match = /^(\d+)m([\d.]+)s$/.exec(field);
  return match === null ? Number.NaN : Number(match[1]) * 60 + Number(match[2]);
}

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  /** Protocol and cipher the connection negotiated, e.g. "TLSv1.3 TLS_AES_256_GCM_SHA384". */
  tls: string;
}

/** One request on a fresh connection: a GET when `body` is empty. */
export function send(port: number, ca: Buffer, body: string, path = '/mutate'): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: body === '' ? 'GET' : 'POST',
        ca,
        servername: 'localhost',
        agent: false,
        headers: body === '' ? {} : { 'content-type': 'application/json' },
        timeout: 10_000,
      },
      (res) => {
        const socket = res.socket as TLSSocket;
        const tls = `${socket.getProtocol() ?? '?'} ${socket.getCipher().name}`;
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), tls }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`127.0.0.1:${port}${path}: no answer in 10 s`)));
    req.on('error', reject);
    req.end(body === '' ? undefined : body);
  });
}

/** The webhook's config in every bench: the first conformance case's ConfigMap, written into `dir`; its file. */
export async function writeWebhookConfig(dir: string): Promise<string> {
  const configCase = JSON.parse(await readFile(CONFIG_CASE, 'utf8')) as { configMap: unknown };
  const file = join(dir, 'config.json');
  await writeFile(file, JSON.stringify(configCase.configMap));
  return file;
}

/** The built webhook's `serve`, as `npm start` runs it but for its address, its config and its certificates. */
export function webhookArgs(port: number, configFile: string, certsDir: string): string[] {
  return serveArgs(port, '--config-file', configFile, '--self-signed-dir', certsDir);
}

export function startNode(args: string[]): ChildProcess {
  // Servers' stdout (the webhook's admission log lines) goes to /dev/null, as cheap a sink as a pipe.
  return spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'inherit'] });
}

/** Waits for /readyz; the CA file appears once the webhook has made its certificates. */
export async function waitReady(port: number, caFile: string, child: ChildProcess): Promise<Buffer> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`process ${child.pid ?? '?'} exited with ${child.exitCode}`);
    try {
      const ca = await readFile(caFile);
      if ((await send(port, ca, '', '/readyz')).status === 200) return ca;
    } catch {
      // not up yet
    }
    await sleep(100);
  }
  throw new Error(`port ${port} not ready after 30 s`);
}

/** SIGTERM, then waits (bounded) so the next target does not start while this one still holds a core. */
export async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  await Promise.race([exited, sleep(5_000)]);
}

export interface ProcSample {
  rssKiB: number;
  cpuMs: number;
}

export async function procSample(pid: number): Promise<ProcSample> {
  const [status, stat] = await Promise.all([
    readFile(`/proc/${pid}/status`, 'utf8'),
    readFile(`/proc/${pid}/stat`, 'utf8'),
  ]);
  return { rssKiB: statusKiB(status, 'VmRSS'), cpuMs: statCpuMs(stat) };
}
