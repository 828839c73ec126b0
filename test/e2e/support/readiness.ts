// Waiting for a started process to answer: poll an HTTP(S) check until it
// passes, failing early (with the log's tail) when a process exits meanwhile.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
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

/** Polls `check` (true, or why not yet) every 250 ms until it passes, a process in `procs` exits, or `deadline`. */
export async function waitUntil(
  what: string,
  deadline: number,
  procs: readonly ManagedProcess[],
  check: () => Promise<string | true>,
): Promise<void> {
  for (;;) {
    for (const p of procs) {
      if (p.exit !== undefined) {
        const tail = logTail(p);
        throw new StartError(
          `${p.name} ${describeExit(p.exit)} while waiting for ${what}; log ${p.logPath}:\n${tail}`,
          /address already in use/i.test(tail),
        );
      }
    }
    let last: string;
    try {
      const r = await check();
      if (r === true) return;
      last = r;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    if (Date.now() > deadline) {
      const tails = procs.map((p) => `--- ${p.name} (${p.logPath}):\n${logTail(p, 20)}`).join('\n');
      throw new StartError(`timed out waiting for ${what} (last: ${last})\n${tails}`, false);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * kube-apiserver picks a new webhook configuration up asynchronously: dry-runs a pod (`dryRun`, which says
 * whether the webhook answered it) every 100 ms until the webhook is called, at most 200 times.
 */
export async function untilWebhookCalled(what: string, dryRun: () => Promise<true | string>): Promise<void> {
  let last = '';
  for (let i = 0; i <= 200; i++) {
    const answer = await dryRun();
    if (answer === true) return;
    last = answer;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`kube-apiserver never called ${what}${last === '' ? '' : `: ${last}`}`);
}
