/**
 * The pod lives but carries no claim (a pool's sandbox, or one recycled): the files of an earlier claim must
 * go. ListDir, then Remove .env_ready (so nothing starts on the way), env.sh and any temporary file an
 * interrupted attempt left; then, when the pod served a claim, .env_recycled and a wake, which end that
 * claim's commands (recycle.ts). With the last claim's token, when this process saw that claim; else without
 * one, which a never-claimed envd accepts and one initialised for an earlier claim refuses (then an Event
 * says the files could not be cleared).
 */
import type { ClaimDecision } from './claim.js';
import { wakeWrappers, type StepDeps } from './deliver-claim.js';
import { EnvdError } from '../envd/envd-files.js';
import { failed, refuse, type Attempt, type LastClaim } from './memory.js';
import { clearingSteps } from '../envd/plan.js';
import { recycledMark } from './recycle.js';
import type { RuntimeEndpoint } from '../envd/envd-files.js';
import type { ReconcileResult } from './work-queue.js';

export async function clearClaim(
  deps: StepDeps & { nonce: string },
  attempt: Attempt,
  decision: Extract<ClaimDecision, { kind: 'unclaimed' }>,
  /** The Sandbox's last claim as this process saw it; undefined when it saw none. */
  lastClaim: LastClaim | undefined,
): Promise<ReconcileResult> {
  const { term, envd, paths } = deps;
  const knownToken = lastClaim?.token;
  const { memory, key } = attempt;
  const done = `${decision.podUid} ${decision.endpoint.url}`;
  memory.wantsNothing(key);
  if (memory.of(key).cleared === done) return { kind: 'done' };
  const endpoint: RuntimeEndpoint = { ...decision.endpoint, accessToken: knownToken };
  let requests = 0;
  try {
    const entries = await envd.list(endpoint, paths.dir, term);
    requests += 1;
    const steps = clearingSteps(
      paths,
      entries.map((entry) => entry.name),
      lastClaim?.podUid === decision.podUid,
      recycledMark(decision.containers),
      deps.nonce,
    );
    for (const step of steps) {
      await envd.run(endpoint, step, term);
      requests += 1;
    }
    if (term.signal.aborted) return { kind: 'done' };
    const marked = steps.some((step) => step.op === 'move' && step.destination === paths.recycledFile);
    if (marked) requests += await wakeWrappers(deps, endpoint, entries);
    if (term.signal.aborted) return { kind: 'done' };
    memory.cleared(key, done);
    if (steps.length > 0) {
      attempt.report({
        kind: 'delivered',
        key,
        podUid: decision.podUid,
        delivery: 'cleared',
        variables: 0,
        requests,
        claimToReadyMs: undefined,
        seenToReadyMs: 0,
      });
    }
    return { kind: 'done' };
  } catch (error) {
    if (!(error instanceof EnvdError)) throw error;
    if (error.kind === 'unauthorized') {
      const message =
        knownToken === undefined
          ? `${error.message}: the files of an earlier claim may still be in pod ${decision.podUid}, and this process never saw that claim, so does not know its token (it started after the claim ended)`
          : `${error.message}: envd does not take the last claim's token`;
      return refuse(attempt, 'unauthorized', 'EnvNotCleared', { code: error.code, message });
    }
    // A pool's pod that was never claimed and is not up yet is no reason to retry for ever: its next change is.
    if (knownToken === undefined && error.kind === 'unavailable') return { kind: 'done' };
    return failed(attempt, error, 'EnvNotCleared');
  }
}
