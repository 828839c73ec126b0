/**
 * SIGTERM with admissions in flight, against the real built server in a child process: every request that
 * reached the server gets its complete answer, the listener stops accepting, idle keep-alive connections
 * do not hold the process, and it exits 0.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:https';
import { parse as parseYaml } from 'yaml';
import { connect } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConformanceCases, reviewFor } from '../support/conformance.js';
import { waitUntil } from '../support/wait-until.js';
import { postJson } from './support/https-client.js';
import { spawnServer, type ChildServer } from './support/child-server.js';
import { temporaryDirectory } from './support/pki.js';

const basic = loadConformanceCases().find((c) => c.name === 'agent-runtime-basic');
if (basic === undefined) throw new Error('conformance case agent-runtime-basic is missing');

let dir: string;
let removeDir: () => Promise<void>;
beforeAll(async () => {
  ({ dir, remove: removeDir } = await temporaryDirectory('shutdown'));
  await writeFile(`${dir}/config.json`, JSON.stringify(basic.configMap));
});
afterAll(() => removeDir());

interface Answer {
  status: number;
  uid: string | undefined;
}

/**
 * A review whose body arrives in two halves: the first before SIGTERM, the rest when `release` resolves.
 * `established` resolves once the server has accepted the connection and the first half is on the wire.
 */
function slowReview(
  port: number,
  ca: Buffer,
  uid: string,
  release: Promise<void>,
): { established: Promise<void>; answer: Promise<Answer> } {
  const body = Buffer.from(JSON.stringify(reviewFor(basic?.pod, uid)));
  const half = Math.floor(body.length / 2);
  let established: () => void = () => undefined;
  const establishedPromise = new Promise<void>((resolve) => (established = resolve));
  const answer = new Promise<Answer>((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/mutate',
        method: 'POST',
        ca,
        servername: 'localhost',
        agent: false,
        headers: { 'content-type': 'application/json', 'content-length': body.length },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const review = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { response?: { uid?: string } };
          resolve({ status: res.statusCode ?? 0, uid: review.response?.uid });
        });
      },
    );
    req.on('error', reject);
    req.on('socket', (socket) => {
      (socket as TLSSocket).once('secureConnect', () => {
        req.write(body.subarray(0, half), () => established());
      });
    });
    void release.then(() => req.end(body.subarray(half)));
  });
  return { established: establishedPromise, answer };
}

/**
 * Resolves once a connection to `port` is refused: the listener has closed. An accepted connection means the
 * listener is still open: the drain closes it right after the shutdown delay.
 */
async function untilRefused(port: number): Promise<void> {
  await waitUntil(() => connectRefused(port), {
    what: `a connection to port ${port} to be refused (the listener closed)`,
    timeoutMs: 10_000,
  });
}

function connectRefused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.on('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.on('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
  });
}

/** serve on free loopback ports, with the test's config file and a self-signed pair in the test's dir. */
function localServeArgs(): string[] {
  return [
    '--host',
    '127.0.0.1',
    '--port',
    '0',
    '--metrics-port',
    '0',
    '--config-file',
    `${dir}/config.json`,
    '--self-signed-dir',
    `${dir}/certs`,
  ];
}

describe('SIGTERM', () => {
  let server: ChildServer | undefined;

  afterAll(() => {
    if (server !== undefined && server.child.exitCode === null) server.child.kill('SIGKILL');
  });

  it('finishes every in-flight admission, stops accepting, and exits 0', async () => {
    const started = await spawnServer([...localServeArgs()], dir);
    server = started;
    const ca = await readFile(`${dir}/certs/ca.crt`);

    // An idle keep-alive connection, which must not keep the process alive.
    const idle = new Agent({ keepAlive: true });
    expect(
      (await postJson(`https://127.0.0.1:${started.port}/mutate`, reviewFor(basic.pod), { ca, agent: idle })).status,
    ).toBe(200);

    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    const inFlight = Array.from({ length: 12 }, (_, i) => slowReview(started.port, ca, `in-flight-${i}`, released));
    await Promise.all(inFlight.map((r) => r.established));

    started.child.kill('SIGTERM');
    await started.logged('shutting down: draining in-flight admissions');
    await untilRefused(started.port);

    release();
    const answers = await Promise.all(inFlight.map((r) => r.answer));
    const exit = await started.exited;
    idle.destroy();

    expect(answers).toEqual(inFlight.map((_, i) => ({ status: 200, uid: `in-flight-${i}` })));
    expect(exit).toEqual({ code: 0, signal: null });
    expect(started.logs.filter((line) => line.msg === 'admission')).toHaveLength(13);
    expect(started.logs.at(-1)).toMatchObject({ msg: 'stopped', forced: false });
  });
});

/** The `--shutdown-delay` the Deployment in manifests/base runs with, as written there. */
async function manifestShutdownDelay(): Promise<string> {
  const deployment = parseYaml(
    await readFile(new URL('../../manifests/base/deployment.yaml', import.meta.url), 'utf8'),
  ) as {
    spec: { template: { spec: { containers: { args: string[] }[] } } };
  };
  const args = deployment.spec.template.spec.containers[0]?.args ?? [];
  const flag = args.find((arg) => arg.startsWith('--shutdown-delay='));
  if (flag === undefined) throw new Error('the Deployment sets no --shutdown-delay');
  return flag.slice('--shutdown-delay='.length);
}

interface LoopReport {
  answered: number;
  /** Answers that said `Connection: close` (those sent from SIGTERM on). */
  closing: number;
  /** Reviews that failed on an established connection: each would be a refused pod. */
  failures: string[];
}

type Sent =
  | { kind: 'answered'; status: number; uid: string | undefined; connection: string | undefined }
  | { kind: 'failed'; code: string; established: boolean };

/**
 * One review over the agent's kept-alive connection (or a new one). A failure says whether the connection
 * had been established, i.e. whether the review could have reached the server: a connection the closing
 * listener resets before its handshake is a refused new connection, not a dropped review.
 */
function sendReview(port: number, ca: Buffer, agent: Agent, uid: string): Promise<Sent> {
  const body = JSON.stringify(reviewFor(basic?.pod, uid));
  return new Promise((resolve) => {
    let established = false;
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/mutate',
        method: 'POST',
        ca,
        servername: 'localhost',
        agent,
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const answer = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { response?: { uid?: string } };
          resolve({
            kind: 'answered',
            status: res.statusCode ?? 0,
            uid: answer.response?.uid,
            connection: res.headers.connection,
          });
        });
      },
    );
    req.on('socket', (socket) => {
      const tls = socket as TLSSocket;
      if (!tls.connecting && !tls.pending) established = true;
      else tls.once('secureConnect', () => (established = true));
    });
    req.on('error', (error: NodeJS.ErrnoException) =>
      resolve({ kind: 'failed', code: error.code ?? error.message, established }),
    );
    req.end(body);
  });
}

/**
 * Sends reviews back to back over one kept-alive connection at a time, as kube-apiserver reuses its
 * connections, until a new connection is refused: the listener has closed.
 */
async function keepAliveLoop(port: number, ca: Buffer, name: string, first: () => void): Promise<LoopReport> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const report: LoopReport = { answered: 0, closing: 0, failures: [] };
  try {
    for (let n = 0; ; n += 1) {
      const uid = `${name}-${n}`;
      const sent = await sendReview(port, ca, agent, uid);
      if (sent.kind === 'failed') {
        if (!sent.established) return report;
        report.failures.push(`${uid}: ${sent.code}`);
        continue;
      }
      if (sent.status !== 200 || sent.uid !== uid) report.failures.push(`${uid}: status ${sent.status}`);
      report.answered += 1;
      if (sent.connection === 'close') report.closing += 1;
      if (report.answered === 1) first();
    }
  } finally {
    agent.destroy();
  }
}

describe('SIGTERM under keep-alive load', () => {
  let server: ChildServer | undefined;

  afterAll(() => {
    if (server !== undefined && server.child.exitCode === null) server.child.kill('SIGKILL');
  });

  it("answers every review sent on 16 kept-alive connections through the drain with the manifests' delay", async () => {
    const delay = await manifestShutdownDelay();
    const started = await spawnServer([...localServeArgs(), '--shutdown-delay', delay], dir);
    server = started;
    const ca = await readFile(`${dir}/certs/ca.crt`);

    let running = 0;
    let allRunning: () => void = () => undefined;
    const everyLoopAnswered = new Promise<void>((resolve) => (allRunning = resolve));
    const loops = Array.from({ length: 16 }, (_, i) =>
      keepAliveLoop(started.port, ca, `loop-${i}`, () => {
        running += 1;
        if (running === 16) allRunning();
      }),
    );
    await everyLoopAnswered;
    started.child.kill('SIGTERM');
    const reports = await Promise.all(loops);
    const exit = await started.exited;

    expect(reports.flatMap((report) => report.failures)).toEqual([]);
    expect(reports.every((report) => report.closing > 0)).toBe(true);
    expect(exit).toEqual({ code: 0, signal: null });
    expect(started.logs.at(-1)).toMatchObject({ msg: 'stopped', forced: false });
  });
});
