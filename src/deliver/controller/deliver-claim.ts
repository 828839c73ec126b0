/**
 * One delivery of a claim into its pod. The folder is listed first: that one request says whether .env_ready
 * is there and whether the wrappers' wake FIFO is. .env_ready is read (GET) only when it is there, and unless
 * it already names this content, env.sh and .env_ready go up under temporary names in one upload and are
 * moved into place, env.sh first (plan.ts). When .env_ready was not there before, one byte then wakes the
 * wrappers, if the listing showed their FIFO. So a first delivery is four requests, five with the wake, and a
 * pod checked again (a new term, a restart) two.
 * A listing that shows .env_recycled (clearing left it: the pod served an earlier claim) is decided by
 * recycle.ts: with `restart`, the mark is read (one GET), and the delivery goes on, the mark removed first, only
 * once every wrapped container has restarted since; until then the claim waits, and past a grace it is refused
 * with a Warning.
 * The listing is a step like the others, and its failure fails the delivery; the wake is best effort, and never
 * counted as a failure: a wrapper that made its FIFO after the listing, or missed the byte, looks again within
 * a second without it.
 */
import type { Clock } from '../../time/clock.js';
import { READY_FILE_NAME, RECYCLED_FILE_NAME } from '../../wrapper/env-dir.js';
import type { ClaimDecision } from './claim.js';
import { EnvdError, type EnvdFiles, type FolderEntry } from '../envd/envd-files.js';
import type { LeaderTerm } from '../leadership/leader-election.js';
import { REFUSALS, type DeliveryKind } from './outcome.js';
import { deliverySteps, wakeStep, type DeliveryStep, type EnvPaths, type ReadyState } from '../envd/plan.js';
import type { RuntimeEndpoint } from '../envd/envd-files.js';
import { failed, refuse, type Attempt } from './memory.js';
import { restartedSince, type RecycledPodMode } from './recycle.js';
import type { ReconcileResult } from './work-queue.js';

export interface StepDeps {
  term: LeaderTerm;
  envd: EnvdFiles;
  paths: EnvPaths;
  clock: Clock;
  /** `--recycled-pods`: when a pod that served an earlier claim takes the next one (recycle.ts). */
  recycledPods: RecycledPodMode;
}

/**
 * How long a claim waits for a recycled pod's containers to restart before a Warning says they did not: the
 * wrapper gives its command 3 s to end, and the kubelet restarts the container at once, or within its crash
 * backoff (10 s after a restart less than 10 minutes before).
 */
const RESTART_GRACE_MS = 30_000;

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
    let readyListed = entries.some((entry) => entry.name === READY_FILE_NAME);
    if (entries.some((entry) => entry.name === RECYCLED_FILE_NAME)) {
      const verdict = await recycled(deps, attempt, decision);
      requests += verdict.requests;
      if (verdict.result !== undefined) return verdict.result;
      // A .env_ready beside the mark is an ended claim's, written late: it goes before the mark does, so that
      // no wrapper starts on it in between (the wrapper waits while the mark is there).
      const stale: DeliveryStep[] = readyListed ? [{ op: 'remove', path: paths.readyFile }] : [];
      for (const step of [...stale, { op: 'remove', path: paths.recycledFile } as const]) {
        await envd.run(target.endpoint, step, term);
        requests += 1;
      }
      readyListed = false;
    }
    // Read only when listed: a first delivery, the common case, needs no GET.
    let ready: ReadyState = { found: false };
    if (readyListed) {
      ready = await envd.readFile(target.endpoint, paths.readyFile, term);
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
    if (!ready.found && steps.length > 0) requests += await wakeWrappers(deps, target.endpoint, entries);
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

/**
 * A claim into a pod marked recycled: `result` when it stops there (refused, or waiting for the containers to
 * restart), none when it goes on; `requests` sent to decide.
 */
async function recycled(
  deps: StepDeps,
  attempt: Attempt,
  decision: Extract<ClaimDecision, { kind: 'deliver' }>,
): Promise<{ result?: ReconcileResult; requests: number }> {
  const { target } = decision;
  if (deps.recycledPods === 'any') return { requests: 0 };
  if (deps.recycledPods === 'recreate')
    return {
      result: refuse(attempt, 'refused', 'EnvPodRecycled', REFUSALS.EnvPodRecycled(recreateReason(target.podUid))),
      requests: 0,
    };
  const mark = await deps.envd.readFile(target.endpoint, deps.paths.recycledFile, deps.term);
  if (!mark.found || restartedSince(mark.body, target.containers)) return { requests: 1 };
  if (attempt.memory.awaitsRestart(attempt.key, attempt.inputs))
    return { result: { kind: 'requeue-after', ms: RESTART_GRACE_MS }, requests: 1 };
  return {
    result: refuse(attempt, 'refused', 'EnvPodRecycled', REFUSALS.EnvPodRecycled(notRestartedReason(target.podUid))),
    requests: 1,
  };
}

/** Why a recycled pod gets no claim with `--recycled-pods=recreate`, and what to do; names no value. */
function recreateReason(podUid: string): string {
  return `pod ${podUid} served an earlier claim (${RECYCLED_FILE_NAME}), and --recycled-pods=recreate gives such a pod no other: recreate the pod (delete it; its Sandbox controller makes a new one)`;
}

/** Why a recycled pod whose containers did not restart gets no claim, and what to do; names no value. */
function notRestartedReason(podUid: string): string {
  return `pod ${podUid} served an earlier claim (${RECYCLED_FILE_NAME}), and its wrapped containers have not restarted since, so processes of that claim may still run there with its variables: nothing is sent until they restart. A wrapper older than this deliver-env, or one that cannot watch the folder, does not end them: recreate the pod (delete it; its Sandbox controller makes a new one)`;
}

/**
 * The wake, when the listing showed the wrappers' FIFO: how many requests were sent. Best effort: nothing of it
 * fails a delivery or a clearing, and a wrapper that misses it looks again within its poll bound.
 */
export async function wakeWrappers(
  deps: StepDeps,
  endpoint: RuntimeEndpoint,
  entries: readonly FolderEntry[],
): Promise<number> {
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
