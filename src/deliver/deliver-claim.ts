/**
 * One delivery of a claim into its pod. The folder is listed first: that one request says whether .env_ready
 * is there and whether the wrappers' wake FIFO is. .env_ready is read (GET) only when it is there, and unless
 * it already names this content, env.sh and .env_ready go up under temporary names in one upload and are
 * moved into place, env.sh first (plan.ts). When .env_ready was not there before, one byte then wakes the
 * wrappers, if the listing showed their FIFO. So a first delivery is four requests, five with the wake, and a
 * pod checked again (a new term, a restart) two.
 * A listing that shows .env_recycled (clearing left it: the pod served an earlier claim) ends the delivery
 * there, refused, unless the operator's recycler restarts sandboxes (`--deliver-to-recycled-pods`).
 * The listing is a step like the others, and its failure fails the delivery; the wake is best effort, and never
 * counted as a failure: a wrapper that made its FIFO after the listing, or missed the byte, looks again within
 * a second without it.
 */
import type { Clock } from '../util/clock.js';
import { READY_FILE_NAME, RECYCLED_FILE_NAME } from '../wrapper/env-dir.js';
import type { ClaimDecision } from './claim.js';
import { EnvdError, type EnvdFiles, type FolderEntry, type SendGuard } from './envd-files.js';
import { REFUSALS, type DeliveryKind } from './outcome.js';
import { deliverySteps, wakeStep, type DeliveryStep, type EnvPaths, type ReadyState } from './plan.js';
import type { RuntimeEndpoint } from './runtime-endpoint.js';
import { failed, refuse, type Attempt } from './memory.js';
import type { ReconcileResult } from './work-queue.js';

export interface StepDeps {
  term: SendGuard;
  envd: EnvdFiles;
  paths: EnvPaths;
  clock: Clock;
  /** `--deliver-to-recycled-pods`: a pod that served an earlier claim takes the next one. */
  deliverToRecycledPods: boolean;
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
  if (memory.of(key).delivered === want) return { kind: 'done' };
  const firstSeenAt = memory.wants(key, want, since);
  const retrying = memory.of(key).failing !== undefined;
  let requests = 0;
  const temps: string[] = [];
  try {
    const entries = await envd.list(target.endpoint, paths.dir, term);
    requests += 1;
    if (!deps.deliverToRecycledPods && entries.some((entry) => entry.name === RECYCLED_FILE_NAME))
      return refuse(attempt, 'refused', 'EnvPodRecycled', REFUSALS.EnvPodRecycled(recycledReason(target.podUid)));
    // Read only when listed: a first delivery, the common case, needs no GET.
    let ready: ReadyState = { found: false };
    if (entries.some((entry) => entry.name === READY_FILE_NAME)) {
      ready = await envd.readReady(target.endpoint, paths.readyFile, term);
      requests += 1;
    }
    const steps = deliverySteps(paths, ready, target.content, target.marker, deps.nonce);
    for (const step of steps) {
      await envd.run(target.endpoint, step, term);
      requests += 1;
      if (step.op === 'upload') temps.push(...step.files.map((file) => file.path));
      if (step.op === 'move') temps.splice(temps.indexOf(step.source), 1);
    }
    if (term.signal.aborted) return { kind: 'done' };
    if (!ready.found && steps.length > 0) requests += await wake(deps, target.endpoint, entries);
    if (term.signal.aborted) return { kind: 'done' };
    const previousPod = memory.delivered(key, want, target.podUid);
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

/** Why a recycled pod gets no claim, and what to do; names no value. */
function recycledReason(podUid: string): string {
  return `pod ${podUid} served an earlier claim and was not recreated since (${RECYCLED_FILE_NAME}): its processes may still hold that claim's variables, so nothing is sent. Recreate the pod (delete it; its Sandbox controller makes a new one), or run deliver-env with --deliver-to-recycled-pods if your recycler restarts the sandbox`;
}

/** The wake, when the listing showed the FIFO: how many requests were sent. Nothing of it fails the delivery. */
async function wake(deps: StepDeps, endpoint: RuntimeEndpoint, entries: readonly FolderEntry[]): Promise<number> {
  const step = wakeStep(deps.paths, entries);
  if (step === undefined) return 0;
  try {
    await deps.envd.run(endpoint, step, deps.term);
  } catch (error) {
    if (!(error instanceof EnvdError)) throw error;
  }
  return 1;
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
