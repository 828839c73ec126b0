/**
 * SIGTERM with admissions in flight, against the real built server in a child process: every request that
 * reached the server gets its complete answer, the listener stops accepting, idle keep-alive connections
 * do not hold the process, and it exits 0.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:https';
import { connect } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConformanceCases, reviewFor } from '../support/conformance.js';
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

describe('SIGTERM', () => {
  let server: ChildServer | undefined;

  afterAll(() => {
    if (server !== undefined && server.child.exitCode === null) server.child.kill('SIGKILL');
  });

  it('finishes every in-flight admission, stops accepting, and exits 0', async () => {
    const started = await spawnServer(
      [
        '--host', '127.0.0.1',
        '--port', '0',
        '--metrics-port', '0',
        '--config-file', `${dir}/config.json`,
        '--self-signed-dir', `${dir}/certs`,
      ],
      dir,
    );
    server = started;
    const ca = await readFile(`${dir}/certs/ca.crt`);

    // An idle keep-alive connection, which must not keep the process alive.
    const idle = new Agent({ keepAlive: true });
    expect((await postJson(`https://127.0.0.1:${started.port}/mutate`, reviewFor(basic.pod), { ca, agent: idle })).status).toBe(200);

    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    const inFlight = Array.from({ length: 12 }, (_, i) => slowReview(started.port, ca, `in-flight-${i}`, released));
    await Promise.all(inFlight.map((r) => r.established));

    const signalledAt = Date.now();
    started.child.kill('SIGTERM');
    await started.logged('shutting down: draining in-flight admissions');
    await sleep(200);
    expect(await connectRefused(started.port)).toBe(true);

    release();
    const answers = await Promise.all(inFlight.map((r) => r.answer));
    const exit = await started.exited;
    idle.destroy();

    expect(answers).toEqual(inFlight.map((_, i) => ({ status: 200, uid: `in-flight-${i}` })));
    expect(exit).toEqual({ code: 0, signal: null });
    expect(Date.now() - signalledAt).toBeLessThan(5000);
    expect(started.logs.filter((line) => line.msg === 'admission')).toHaveLength(13);
    expect(started.logs.at(-1)).toMatchObject({ msg: 'stopped', forced: false });
  });
});
