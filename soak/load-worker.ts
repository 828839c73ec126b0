/** The worker side of NormalLoad (load.ts): paced loops of the example review until told to stop. */
import { setTimeout as sleep } from 'node:timers/promises';
import { parentPort, workerData } from 'node:worker_threads';
import { checkReviewAnswer } from './check.js';
import { exchange, keepAliveAgent } from './http.js';
import { epochMs, type LoadReport, type LoadSpec, type TimedAdmission } from './load.js';
import { exampleReview, reviewText } from './reviews.js';
import { Tally } from './tally.js';

const spec = workerData as LoadSpec;
const target = { port: spec.port, ca: spec.ca };
const review = exampleReview();
const failed = new Tally(2);
const lost = new Tally(2);
const versions = new Tally();
const latencies: number[] = [];
const timed: TimedAdmission[] = [];
let tried = 0;
let ok = 0;
let mixed = 0;
let fives = 0;
let stopping = false;
parentPort?.on('message', () => (stopping = true));

async function loop(name: string, fresh: boolean): Promise<void> {
  const agent = fresh ? false : keepAliveAgent(target);
  for (let n = 0; !stopping; n += 1) {
    const uid = `normal-${name}-${n}`;
    const body = reviewText(review, uid);
    tried += 1;
    const sentAt = epochMs();
    const outcome = await exchange(
      target,
      agent,
      { method: 'POST', path: '/mutate', headers: { 'content-type': 'application/json' }, body },
      spec.timeoutMs,
    );
    latencies.push(outcome.ms);
    timed.push({ at: sentAt, ms: outcome.ms, fresh });
    const how = fresh ? 'fresh connection' : 'kept-alive connection';
    if (outcome.kind === 'error') {
      lost.add(`${outcome.error} (${how}${outcome.reused ? ', reused' : ''})`, uid);
    } else if (outcome.status !== 200) {
      if (outcome.status >= 500) fives += 1;
      failed.add(`${outcome.status} (${how})`, `${uid}: ${outcome.body.toString('utf8').slice(0, 200)}`);
    } else {
      const verdict = checkReviewAnswer(body, outcome.body);
      const allowed = (JSON.parse(outcome.body.toString('utf8')) as { response?: { allowed?: unknown } }).response
        ?.allowed;
      if ('deep' in verdict || !verdict.ok) {
        failed.add('deep' in verdict ? 'too deep to check' : verdict.reason, uid);
      } else if (allowed !== true) {
        failed.add('denied', `${uid}: ${outcome.body.toString('utf8').slice(0, 200)}`);
      } else if (!verdict.patched && spec.expectPatch) {
        failed.add('no patch', uid);
      } else {
        ok += 1;
        if (verdict.versions.length > 1) mixed += 1;
        versions.add(verdict.versions.length === 0 ? 'none' : verdict.versions.join('+'));
      }
    }
    const rest = spec.pauseMs - outcome.ms;
    if (rest > 0 && !stopping) await sleep(rest);
  }
  if (agent !== false) agent.destroy();
}

await Promise.all([
  ...Array.from({ length: spec.keptAlive }, (_, i) => loop(`k${i}`, false)),
  ...Array.from({ length: spec.fresh }, (_, i) => loop(`f${i}`, true)),
]);
const report: LoadReport = {
  tried,
  ok,
  failed: [...failed.counts],
  lost: [...lost.counts],
  examples: [...failed.exampleLines(''), ...lost.exampleLines('')],
  mixed,
  versions: [...versions.counts],
  latencies: latencies.sort((a, b) => a - b),
  timed,
  fives,
};
parentPort?.postMessage(report);
