/**
 * One delivery of a claim into its pod: GET .env_ready, and unless it already names this content, env.sh and
 * .env_ready each through a temporary name and a Move (plan.ts). When .env_ready was not there before, the
 * folder is listed and, if it holds the wrappers' FIFO, one byte wakes them; the wake is best effort (the
 * wrappers look again within a second without it) and is never counted as a failure.
 */
import type { Clock } from '../util/clock.js';
import type { ClaimDecision } from './claim.js';
import { EnvdError, type EnvdFiles, type SendGuard } from './envd-files.js';
import type { DeliveryKind } from './outcome.js';
import { deliverySteps, wakeStep, type DeliveryStep, type EnvPaths } from './plan.js';
import type { RuntimeEndpoint } from './runtime-endpoint.js';
import { failed, type Attempt } from './term-memory.js';
import type { ReconcileResult } from './work-queue.js';

export interface StepDeps {
  term: SendGuard;
  envd: EnvdFiles;
  paths: EnvPaths;
  clock: Clock;
}

export async function deliverClaim(
  deps: StepDeps & { nonce: string },
  attempt: Attempt,
  decision: Extract<ClaimDecision, { kind: 'deliver' }>,
  since: number,
): Promise<ReconcileResult> {
  const { term, envd, paths, clock } = deps;
  const { memory, key } = attempt;
  const { target } = decision;
  const want = `${target.podUid} ${target.endpoint.url} ${target.marker}`;
  if (memory.delivered.get(key) === want) return { kind: 'done' };
  const seen = memory.firstSeen.get(key);
  const firstSeenAt = seen?.want === want ? seen.at : since;
  memory.firstSeen.set(key, { want, at: firstSeenAt });
  const retrying = memory.failing.has(key);
  let requests = 0;
  const temps: string[] = [];
  try {
    const ready = await envd.readReady(target.endpoint, paths.readyFile, term);
    requests += 1;
    const steps = deliverySteps(paths, ready, target.content, target.marker, deps.nonce);
    for (const step of steps) {
      await envd.run(target.endpoint, step, term);
      requests += 1;
      if (step.op === 'upload') temps.push(step.path);
      if (step.op === 'move') temps.splice(temps.indexOf(step.source), 1);
    }
    if (term.signal.aborted) return { kind: 'done' };
    if (!ready.found && steps.length > 0) requests += await wake(deps, target.endpoint);
    if (term.signal.aborted) return { kind: 'done' };
    const previousPod = memory.lastPod.get(key);
    memory.delivered.set(key, want);
    // A resumed claim's old pod is gone: only the new one's token is worth keeping.
    if (previousPod !== undefined && previousPod !== target.podUid) memory.claimEndpoints.delete(previousPod);
    memory.claimEndpoints.set(target.podUid, target.endpoint);
    memory.lastPod.set(key, target.podUid);
    memory.cleared.delete(key);
    memory.failing.delete(key);
    memory.firstSeen.delete(key);
    if (steps.length === 0 && !retrying) {
      attempt.report({ kind: 'unchanged', key, podUid: target.podUid, requests });
      return { kind: 'done' };
    }
    const delivery: DeliveryKind = target.empty
      ? 'empty'
      : ready.found
        ? 'change'
        : previousPod !== undefined && previousPod !== target.podUid
          ? 'resume'
          : 'claim';
    const claimed = target.claimedAtMs;
    attempt.report({
      kind: 'delivered',
      key,
      podUid: target.podUid,
      delivery,
      variables: target.variableCount,
      requests,
      claimToReadyMs:
        (delivery === 'claim' || delivery === 'empty') && claimed !== undefined
          ? Math.max(0, clock.now() - claimed)
          : undefined,
      seenToReadyMs: Math.max(0, clock.monotonic() - firstSeenAt),
    });
    return { kind: 'done' };
  } catch (error) {
    if (!(error instanceof EnvdError)) throw error;
    await removeQuietly(deps, target.endpoint, temps);
    return failed(attempt, error, 'EnvDeliveryFailed');
  }
}

/** The list and the wake: how many requests were sent. Nothing of it fails the delivery. */
async function wake(deps: StepDeps, endpoint: RuntimeEndpoint): Promise<number> {
  let requests = 0;
  try {
    const entries = await deps.envd.list(endpoint, deps.paths.dir, deps.term);
    requests += 1;
    const step = wakeStep(deps.paths, entries);
    if (step === undefined) return requests;
    requests += 1;
    await deps.envd.run(endpoint, step, deps.term);
  } catch (error) {
    if (!(error instanceof EnvdError)) throw error;
  }
  return requests;
}

/** A temporary file an attempt uploaded and could not move holds the claim's values: it goes, if it can. */
async function removeQuietly(deps: StepDeps, endpoint: RuntimeEndpoint, paths: readonly string[]): Promise<void> {
  for (const path of paths) {
    const step: DeliveryStep = { op: 'remove', path };
    try {
      await deps.envd.run(endpoint, step, deps.term);
    } catch {
      // Best effort: the next attempt, or clearing, lists and removes what is left.
    }
  }
}
