// Waiting for a started process to answer: poll an HTTP(S) check until it
// passes, failing early (with the log's tail) when a process exits meanwhile.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { waitUntil } from '../../support/wait-until.js';
import { describeExit, logTail, type ManagedProcess } from './processes.js';

export interface HttpResult {
  status: number;
  body: string;
}

/** What an https GET presents: the CA it trusts and its client certificate. */
export interface TlsMaterial {
  ca: string;
  cert: string;
  key: string;
}

export function httpGet(url: string, tls?: TlsMaterial, timeoutMs = 5000): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const onResponse = (res: IncomingMessage): void => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    };
    const req =
      u.protocol === 'https:'
        ? httpsRequest(u, { method: 'GET', timeout: timeoutMs, ...(tls ?? {}) }, onResponse)
        : httpRequest(u, { method: 'GET', timeout: timeoutMs }, onResponse);
    req.on('timeout', () => req.destroy(new Error(`GET ${url} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

/** A failed start; `portInUse` when a port chosen as free was taken before the process bound it. */
export class StartError extends Error {
  constructor(
    message: string,
    readonly portInUse: boolean,
  ) {
    super(message);
  }
}

/**
 * Asks `check` (true, or why not yet) every 250 ms until it passes, a process in `procs` exits, or `deadline`
 * (Date.now() time, shared by the steps of one start). A check that throws has not passed yet: what it threw
 * is why.
 */
export async function untilServing(
  what: string,
  deadline: number,
  procs: readonly ManagedProcess[],
  check: () => Promise<string | true>,
): Promise<void> {
  const why = (err: unknown): string => (err instanceof Error ? err.message : String(err));
  await waitUntil(() => check().catch(why), {
    what,
    timeoutMs: Math.max(0, deadline - Date.now()),
    intervalMs: 250,
    until: (answer) => answer === true,
    giveUp: () => {
      const exited = procs.find((p) => p.exit !== undefined);
      if (exited?.exit === undefined) return undefined;
      const tail = logTail(exited);
      return new StartError(
        `${exited.name} ${describeExit(exited.exit)} while waiting for ${what}; log ${exited.logPath}:\n${tail}`,
        /address already in use/i.test(tail),
      );
    },
    detail: () => procs.map((p) => `--- ${p.name} (${p.logPath}):\n${logTail(p, 20)}`).join('\n'),
  });
}

/**
 * kube-apiserver picks a new webhook configuration up asynchronously: dry-runs a pod (`dryRun`, which says
 * whether the webhook answered it) every 100 ms until the webhook is called, for at most a minute.
 */
export async function untilWebhookCalled(what: string, dryRun: () => Promise<true | string>): Promise<void> {
  await waitUntil(dryRun, {
    what: `kube-apiserver to call ${what}`,
    timeoutMs: 60_000,
    intervalMs: 100,
    until: (answer) => answer === true,
  });
}
