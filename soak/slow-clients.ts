/**
 * The slow-client phases. Each holds its bad connections open for SOAK_SLOW_SECONDS while normal admissions
 * keep flowing, then reports whether the server closed the bad ones (and when), and how long the normal
 * admissions waited:
 *
 *   never-read      pipeline heavy reviews (each answer ~3.5 times its request) as fast as the server takes
 *                   them, and never read a byte of the answers
 *   stalled-body    declare a body, send all of it but the last byte, then nothing: half of them 6 MiB (over
 *                   today's limit, refused from the header alone), half exactly the body limit (accepted, so
 *                   it is the server's in-flight cap that must hold)
 *   byte-at-a-time  a whole request head, then the body one byte a second
 *   slowloris       a request line, then header bytes one a second, never the blank line
 */
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { NormalLoad, describeLoad, describeTail, epochMs, normalLoadSpec, tailOf } from './load.js';
import { connectRaw, probeBodyLimit, requestHead, type RawConnection } from './raw.js';
import { exampleReview, heavyReview, reviewText } from './reviews.js';
import { cpuMs } from '../harness/proc.js';
import { LOOP_PROBE_FILE } from './loop-probe.js';
import type { PhaseResult, PhaseRun, Session } from './session.js';
import { median } from '../harness/quantiles.js';
import { Tally } from './tally.js';

export type SlowMode = 'never-read' | 'stalled-body' | 'byte-at-a-time' | 'slowloris';

const STALLED_DECLARED = 6 * 1024 * 1024;
/** A bound on each never-reading client: 5,000 reviews of 5.8 KB, should the server keep reading them. */
const PIPELINED_PER_CONNECTION = 5_000;
/** Handshakes are started this many at a time: a handshake flood is another test, and no two cores survive it. */
const CONNECT_BATCH = 50;
/** Normal admissions alone before the attack: their tail is the quiet one the attack's is compared with. */
const WARM_UP_MS = 8_000;
/** The first admissions of a fresh server warm its JIT and are left out of the quiet tail. */
const QUIET_SKIP_MS = 2_000;
const RECOVERY_MS = 3_000;

/** One mode's attack on `session`'s server; the phase's folder and setup are the session's. */
export async function slowClientPhase(mode: SlowMode, session: Session, run: PhaseRun): Promise<PhaseResult> {
  const { options, timeoutMs } = run;
  const count = {
    'never-read': options.neverReadConnections,
    'stalled-body': options.stalledConnections,
    'byte-at-a-time': options.byteConnections,
    slowloris: options.slowlorisConnections,
  }[mode];
  const bodyLimit = mode === 'stalled-body' ? (await probeBodyLimit(session.target))?.limit : undefined;
  const declared = [STALLED_DECLARED, Math.min(STALLED_DECLARED, bodyLimit ?? STALLED_DECLARED)];
  const load = new NormalLoad(normalLoadSpec(session.target, timeoutMs));
  const quietFrom = epochMs() + QUIET_SKIP_MS;
  await sleep(QUIET_SKIP_MS);
  const quietCpu = await cpuMs(session.server.pid);
  await sleep(WARM_UP_MS - QUIET_SKIP_MS);

  const attackCpu = await cpuMs(session.server.pid);
  const attackFrom = epochMs();
  const t0 = performance.now();
  const connections: RawConnection[] = [];
  const refusedConnects = new Tally();
  const writers: Promise<void>[] = [];
  const heavy = reviewText(heavyReview(), 'never-read');
  const example = Buffer.from(reviewText(exampleReview(), 'byte-at-a-time'));
  const pipelined = Buffer.from(requestHead(Buffer.byteLength(heavy)) + heavy);
  let holding = true;
  // Per connection, the offset of the next byte the ticker sends.
  const offsets = new Map<RawConnection, number>();
  const slowHeader = Buffer.from('X-Soak-Slow: ' + 'a'.repeat(4_000) + '\r\n');

  for (let i = 0; i < count && session.server.alive; i += CONNECT_BATCH) {
    const batch = Array.from({ length: Math.min(CONNECT_BATCH, count - i) }, () => connectRaw(session.target, t0));
    for (const result of await Promise.allSettled(batch)) {
      if (result.status === 'rejected') {
        refusedConnects.add((result.reason as NodeJS.ErrnoException).code ?? String((result.reason as Error).message));
        continue;
      }
      const connection = result.value;
      connections.push(connection);
      switch (mode) {
        case 'never-read':
          connection.socket.pause();
          writers.push(neverRead(connection, pipelined, () => holding));
          break;
        case 'stalled-body':
          writers.push(stallMidBody(connection, declared[connections.length % 2] ?? STALLED_DECLARED));
          break;
        case 'byte-at-a-time':
          connection.socket.write(requestHead(example.length));
          offsets.set(connection, 0);
          break;
        case 'slowloris':
          connection.socket.write('POST /mutate HTTP/1.1\r\nHost: localhost\r\n');
          offsets.set(connection, 0);
          break;
      }
    }
  }
  const connectedAt = (performance.now() - t0) / 1000;

  const ticker = setInterval(() => {
    for (const [connection, offset] of offsets) {
      if (!connection.open) continue;
      const source = mode === 'slowloris' ? slowHeader : example;
      connection.socket.write(source.subarray(offset % source.length, (offset % source.length) + 1));
      offsets.set(connection, offset + 1);
    }
  }, 1_000);

  const holdUntil = performance.now() + options.slowHoldSeconds * 1000;
  while (performance.now() < holdUntil && session.server.alive) {
    if (mode !== 'never-read' && connections.every((c) => !c.open) && performance.now() - t0 > 5_000) break;
    await sleep(250);
  }
  clearInterval(ticker);
  holding = false;
  const attackTo = epochMs();
  const endCpu = await cpuMs(session.server.pid);
  const heldFor = (performance.now() - t0) / 1000;

  // Clients that never read cannot see a close until they read: read now, and see who was already gone.
  if (mode === 'never-read') {
    for (const connection of connections) connection.socket.resume();
    await sleep(3_000);
  }
  const openAtEnd = connections.filter((c) => c.open).length;
  for (const connection of connections) connection.end();
  await Promise.allSettled(writers);
  await sleep(RECOVERY_MS);
  const report = await load.stop();
  const tail = { quiet: tailOf(report, quietFrom, attackFrom), attack: tailOf(report, attackFrom, attackTo) };

  const closed = connections.filter((c) => c.closedByServer);
  const closeTimes = closed.map((c) => c.closedAt ?? 0).sort((a, b) => a - b);
  const firstLines = new Tally();
  const errors = new Tally();
  for (const c of connections) {
    firstLines.add(c.firstLine === undefined ? 'no answer' : c.firstLine.slice(0, 40));
    if (c.error !== undefined) errors.add(c.error);
  }
  const notes = [
    ...(mode === 'stalled-body'
      ? [`declared bodies: ${[...new Set(declared)].join(' and ')} bytes (body limit ${bodyLimit ?? 'not found'})`]
      : []),
    `${mode}: ${connections.length}/${count} connected in ${connectedAt.toFixed(1)} s${refusedConnects.total > 0 ? `, ${refusedConnects.total} refused (${refusedConnects.summary(4)})` : ''}; held ${heldFor.toFixed(0)} s`,
    mode === 'never-read'
      ? `closed by the server: ${closed.length} (seen only when they finally read, ${heldFor.toFixed(0)} s in), still open ${openAtEnd}`
      : `closed by the server: ${closed.length}${closed.length > 0 ? ` (first ${fmt(closeTimes[0])} s, median ${fmt(median(closeTimes))} s, last ${fmt(closeTimes[closeTimes.length - 1])} s after the attack began)` : ''}, still open at the end ${openAtEnd}`,
    `what the bad connections got: ${firstLines.summary(6)}${errors.total > 0 ? `; errors ${errors.summary(4)}` : ''}`,
    ...describeLoad(report),
    describeTail('  quiet, before the attack', tail.quiet),
    describeTail('  under the attack', tail.attack),
    `  server CPU: ${cpuShare(quietCpu, attackCpu, attackFrom - quietFrom)} of a core before the attack, ${cpuShare(attackCpu, endCpu, attackTo - attackFrom)} during it`,
  ];
  const failed = report.failed.reduce((sum, [, n]) => sum + n, 0);
  const lost = report.lost.reduce((sum, [, n]) => sum + n, 0);
  const result = await session.close(mode, {
    tried: report.tried,
    failed,
    lost,
    fives: report.fives,
    normalLost: failed + lost,
    completed: connections.length + refusedConnects.total >= count,
    notes,
    broken: [],
    tail,
  });
  const stretches = await longestStretches(dirname(session.server.logFile), [quietFrom, attackFrom, attackTo]);
  if (stretches !== undefined) {
    result.notes.push(
      `longest main-thread CPU stretch between two loop turns (loop probe): ${stretches.map((ms) => `${ms.toFixed(0)} ms`).join(' before the attack, ')} during it`,
    );
  }
  if (mode === 'never-read') {
    // Read once the server has stopped, so its log is complete.
    const reviewed = await admissionsLogged(session.server.logFile, 'never-read');
    result.notes.push(
      `reviews the server answered for the never-reading clients: ${reviewed} (${(reviewed / Math.max(1, connections.length)).toFixed(1)} a connection)`,
    );
  }
  return result;
}

/** The loop probe's longest stretch within each window between consecutive `bounds` (epoch ms), if it ran. */
async function longestStretches(dir: string, bounds: number[]): Promise<number[] | undefined> {
  const text = await readFile(join(dir, LOOP_PROBE_FILE), 'utf8').catch(() => undefined);
  if (text === undefined) return undefined;
  const entries = text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as { at: number; longestCpuMs: number });
  return bounds.slice(1).map((to, i) => {
    const from = bounds[i] ?? 0;
    // An entry covers the 250 ms up to its time: one that straddles the attack's start counts for the attack.
    return Math.max(0, ...entries.filter((e) => e.at > from && e.at <= to).map((e) => e.longestCpuMs));
  });
}

/** Admission log lines for one uid. */
async function admissionsLogged(logFile: string, uid: string): Promise<number> {
  const text = await readFile(logFile, 'utf8');
  const needle = `"uid":${JSON.stringify(uid)}`;
  return text.split('\n').filter((line) => line.includes(needle) && line.includes('"msg":"admission"')).length;
}

/** A body declared and sent but for its last byte, respecting backpressure, then silence. */
async function stallMidBody(connection: RawConnection, declared: number): Promise<void> {
  const { socket } = connection;
  const prefix =
    '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"stalled","object":{"metadata":{"annotations":{"a":"';
  socket.write(requestHead(declared) + prefix);
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  let sent = Buffer.byteLength(prefix);
  while (sent < declared - 1 && connection.open) {
    const size = Math.min(chunk.length, declared - 1 - sent);
    sent += size;
    if (!socket.write(chunk.subarray(0, size))) await drained(connection);
  }
}

/** Requests written back to back for as long as the server reads them, up to a count; answers never read. */
async function neverRead(connection: RawConnection, request: Buffer, holding: () => boolean): Promise<void> {
  for (let i = 0; i < PIPELINED_PER_CONNECTION && connection.open && holding(); i += 1) {
    if (!connection.socket.write(request)) await drained(connection, holding);
  }
}

/** Until the socket takes more, closes, or (checked each second) the hold is over. */
function drained(connection: RawConnection, holding: () => boolean = () => true): Promise<void> {
  const { socket } = connection;
  return new Promise<void>((resolve) => {
    const done = (): void => {
      clearInterval(check);
      socket.off('drain', done);
      socket.off('close', done);
      resolve();
    };
    const check = setInterval(() => {
      if (!holding()) done();
    }, 1_000);
    socket.on('drain', done);
    socket.on('close', done);
  });
}

/** CPU used between two readings, as a share of one core over `wallMs`; load-independent where latency is not. */
function cpuShare(from: number | undefined, to: number | undefined, wallMs: number): string {
  if (from === undefined || to === undefined || wallMs <= 0) return 'unknown';
  return `${(((to - from) / wallMs) * 100).toFixed(0)}% (${((to - from) / 1000).toFixed(2)} s)`;
}

function fmt(seconds: number | undefined): string {
  return (seconds ?? 0).toFixed(1);
}
