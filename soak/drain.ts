/**
 * SIGTERM under keep-alive load, the way a rolling update meets kube-apiserver: 16 kept-alive connections
 * send reviews back to back, through the shutdown delay and the drain, until their next connection is
 * refused (the listener is closed, as documented) or the process is gone.
 *
 * A reset is a request that was sent and never answered: under failurePolicy Fail, a refused pod. A new
 * connection refused once the shutdown delay is over (or reset before its TLS handshake, sitting in the
 * listener's backlog as it closed) carried no request and is not a loss: docs/server.md promises it, and in a
 * cluster the delay has taken the pod out of the Service's endpoints by then, so new connections go to another
 * replica. During the delay, it is a loss.
 */
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Agent } from 'node:https';
import { checkReviewAnswer } from './check.js';
import { exchange, keepAliveAgent } from './http.js';
import { exampleReview, reviewText } from './reviews.js';
import type { HelpFlag } from './server.js';
import { Session, type PhaseResult, type PhaseRun } from './session.js';
import { Tally } from './tally.js';

const SHUTDOWN_DELAY_SECONDS = 2;
const WARM_UP_MS = 2_000;

/** The delay as this build of serve takes it: a duration, or whole seconds before durations took one form. */
export function shutdownDelayArgs(help: Map<string, HelpFlag>): string[] | undefined {
  if (help.has('shutdown-delay')) return ['--shutdown-delay', `${SHUTDOWN_DELAY_SECONDS}s`];
  if (help.has('shutdown-delay-seconds')) return ['--shutdown-delay-seconds', String(SHUTDOWN_DELAY_SECONDS)];
  return undefined;
}

export async function drainPhase(
  { dir, setup, options, timeoutMs }: PhaseRun,
  delayArgs: readonly string[] | undefined,
): Promise<PhaseResult> {
  const rounds: PhaseResult[] = [];
  const notes: string[] = [];
  const broken: string[] = [];
  const review = exampleReview();
  if (delayArgs === undefined) notes.push('serve has no --shutdown-delay: drained with no delay');
  const delayMs = delayArgs !== undefined ? SHUTDOWN_DELAY_SECONDS * 1000 : 0;

  for (let round = 1; round <= options.drainRounds; round += 1) {
    const roundDir = join(dir, `round-${round}`);
    const session = await Session.open({
      dir: roundDir,
      caFile: join(roundDir, 'certs/ca.crt'),
      ...setup,
      args: [...setup.args, '--self-signed-dir', join(roundDir, 'certs'), ...(delayArgs ?? [])],
    });
    let signalledAt: number | undefined = undefined;
    const counts = { before: 0, after: 0, ok: 0 };
    const failed = new Tally(2);
    const resets = new Tally(2);
    const refused = new Tally();
    // Longer than the delay plus the server's own 25 s drain timeout: the loops end by refusal long before.
    const deadline = performance.now() + WARM_UP_MS + (SHUTDOWN_DELAY_SECONDS + 25 + 10) * 1000;

    const loop = async (agent: Agent, name: string): Promise<void> => {
      for (let n = 0; performance.now() < deadline && session.server.alive; n += 1) {
        const after = signalledAt !== undefined;
        if (after) counts.after += 1;
        else counts.before += 1;
        const body = reviewText(review, `drain-${round}-${name}-${n}`);
        const outcome = await exchange(
          session.target,
          agent,
          { method: 'POST', path: '/mutate', headers: { 'content-type': 'application/json' }, body },
          timeoutMs,
        );
        if (outcome.kind === 'error') {
          const sinceSignal = signalledAt === undefined ? -1 : performance.now() - signalledAt;
          // Refused, or reset in the listener's backlog as it closes: either way no request byte was sent.
          if (!outcome.handshaken && sinceSignal >= delayMs - 100) {
            refused.add(`${outcome.error} on a new connection after the delay`);
            return;
          }
          resets.add(
            `${outcome.error}${outcome.reused ? ' on a reused connection' : ' on a new connection'}${after ? ' after SIGTERM' : ' before SIGTERM'}`,
          );
          continue;
        }
        const verdict = outcome.status === 200 ? checkReviewAnswer(body, outcome.body) : undefined;
        if (verdict !== undefined && 'ok' in verdict && verdict.ok && verdict.patched) counts.ok += 1;
        else failed.add(outcome.status === 200 ? 'wrong answer' : String(outcome.status));
      }
    };

    const agents = Array.from({ length: options.drainConnections }, () => keepAliveAgent(session.target));
    const loops = agents.map((agent, i) => loop(agent, `c${i}`));
    await sleep(WARM_UP_MS);
    signalledAt = performance.now();
    session.server.signal('SIGTERM');
    await Promise.all(loops);
    for (const agent of agents) agent.destroy();
    // The server's own drain timeout is 25 s; past that plus a margin it is killed, and the exit says so.
    const killer = setTimeout(() => session.server.signal('SIGKILL'), (SHUTDOWN_DELAY_SECONDS + 25 + 15) * 1000);
    const exit = await session.server.exited;
    clearTimeout(killer);
    const drainedIn = (performance.now() - signalledAt) / 1000;

    const fives = [...failed.counts].filter(([status]) => /^5/.test(status)).reduce((sum, [, n]) => sum + n, 0);
    const result = await session.close(`drain round ${round}`, {
      tried: counts.before + counts.after,
      failed: failed.total,
      lost: resets.total,
      fives,
      normalLost: failed.total + resets.total,
      completed: true,
      notes: [],
      broken: [],
    });
    rounds.push(result);
    notes.push(
      `round ${round}: ${counts.after} sent after SIGTERM (${counts.before} before), ${counts.ok} ok in all, ${resets.total} reset, ${failed.total} failed; ` +
        `${refused.total} new connections refused after the delay (${refused.summary(3)}); exit ${String(exit.code ?? exit.signal)} ${drainedIn.toFixed(1)} s after SIGTERM`,
    );
    if (resets.total > 0) notes.push(`  resets: ${resets.summary()}`);
    if (failed.total > 0) notes.push(`  failed: ${failed.summary()}`);
    notes.push(...result.notes.map((line) => `  ${line}`));
    if (exit.code !== 0)
      broken.push(`drain round ${round}: serve exited ${String(exit.code ?? exit.signal)} after SIGTERM, not 0`);
  }

  const sum = (pick: (r: PhaseResult) => number): number => rounds.reduce((total, r) => total + pick(r), 0);
  let offset = 0;
  const samples = rounds.flatMap((r) => {
    const shifted = r.samples.map((s) => ({ ...s, t: s.t + offset }));
    offset += r.seconds;
    return shifted;
  });
  return {
    name: 'drain',
    tried: sum((r) => r.tried),
    failed: sum((r) => r.failed),
    lost: sum((r) => r.lost),
    fives: sum((r) => r.fives),
    normalLost: sum((r) => r.normalLost),
    seconds: sum((r) => r.seconds),
    samples,
    hwmMiB: Math.max(0, ...rounds.map((r) => r.hwmMiB)),
    baselineFds: Math.max(0, ...rounds.map((r) => r.baselineFds)),
    settledFds: undefined,
    crashes: rounds.flatMap((r) => r.crashes),
    completed: rounds.length >= options.drainRounds,
    notes,
    broken,
  };
}
