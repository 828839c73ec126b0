/**
 * When to renew what: a pure function of the Secret's certificates, the time and the policy, so every rule
 * is tested with plain objects and a chosen clock. The one effectful part, making keys and signing, is
 * `applyPlan`.
 *
 * A CA rotation goes through three states so that no client ever meets a certificate it does not trust:
 *   1. stage:   a new CA joins the trust bundle (`next`); the old CA keeps signing.
 *   2. promote: once `caOverlapMs` has passed since staging (the webhook configuration carries both CAs
 *               everywhere by then), the new CA signs a new serving certificate; the old one becomes
 *               `previous` and stays trusted, because replicas that have not re-read the Secret yet still
 *               serve certificates it signed.
 *   3. the previous CA leaves the bundle when it expires or when the next promotion replaces it.
 */
import { DAY_MS, coversNames, createCa, issueServing, notAfter, parseCertificate, type SubjectNames } from './pki.js';
import type { CertState } from './state.js';

export interface RenewalPolicy {
  names: SubjectNames;
  servingValidityDays: number;
  /** The serving certificate is replaced when less than this is left. */
  servingRenewBeforeDays: number;
  caValidityDays: number;
  /** A CA rotation starts when the CA has less than this left. */
  caRenewBeforeDays: number;
  /** Time between a new CA joining the trust bundle and it signing. */
  caOverlapMs: number;
}

export interface RenewalRequest {
  /** Issue a new serving certificate even when the current one is good. */
  renewServing?: boolean;
  /** Start a CA rotation even when the CA is far from its end (a rotation already under way continues). */
  rotateCa?: boolean;
}

export type CaStep =
  { kind: 'keep' } | { kind: 'create'; reason: string } | { kind: 'stage'; reason: string } | { kind: 'promote' };

export interface RenewalPlan {
  ca: CaStep;
  /** Why the serving certificate is replaced, or undefined to keep it. */
  issueServing: string | undefined;
  dropPrevious: boolean;
}

/**
 * Settings `checkPolicy` refuses. Only a caller of startSelfManagedCertificates can pass them (serve passes
 * none, so the defaults hold): a mistake in the code, not a failure with a code of the catalogue.
 */
export class PolicyError extends Error {
  override readonly name = 'PolicyError';
}

/**
 * Refuses settings that would renew on every pass: a certificate whose whole life is shorter than its
 * renewal margin, or a CA margin too small to hold a serving certificate's margin (serving certificates
 * never outlive their CA, so the serving certificate would be due as soon as it is issued).
 */
export function checkPolicy(policy: RenewalPolicy): void {
  const positive: [string, number][] = [
    ['validityDays', policy.servingValidityDays],
    ['caValidityDays', policy.caValidityDays],
  ];
  for (const [name, value] of positive) {
    if (!(value > 0)) throw new PolicyError(`${name} must be greater than 0 (got ${value})`);
  }
  if (!(policy.servingRenewBeforeDays >= 0 && policy.servingRenewBeforeDays < policy.servingValidityDays)) {
    throw new PolicyError(
      `renewBeforeDays (${policy.servingRenewBeforeDays}) must be at least 0 and less than validityDays (${policy.servingValidityDays})`,
    );
  }
  if (!(policy.caRenewBeforeDays < policy.caValidityDays)) {
    throw new PolicyError(
      `caRenewBeforeDays (${policy.caRenewBeforeDays}) must be less than caValidityDays (${policy.caValidityDays})`,
    );
  }
  if (!(policy.caOverlapMs >= 0)) throw new PolicyError(`caOverlapMs must be at least 0 (got ${policy.caOverlapMs})`);
  if (!(policy.caRenewBeforeDays * DAY_MS > policy.servingRenewBeforeDays * DAY_MS + policy.caOverlapMs)) {
    throw new PolicyError(
      `caRenewBeforeDays (${policy.caRenewBeforeDays}) must exceed renewBeforeDays (${policy.servingRenewBeforeDays}) plus the CA overlap`,
    );
  }
}

export function planRenewal(
  state: CertState,
  now: Date,
  policy: RenewalPolicy,
  request: RenewalRequest = {},
): RenewalPlan {
  const ca = planCa(state, now, policy, request);
  const previousExpired = state.previousCaPem !== undefined && previousCaExpired(state.previousCaPem, now);
  return { ca, issueServing: servingReason(state, ca, now, policy, request), dropPrevious: previousExpired };
}

export function planIsEmpty(plan: RenewalPlan): boolean {
  return plan.ca.kind === 'keep' && plan.issueServing === undefined && !plan.dropPrevious;
}

function planCa(state: CertState, now: Date, policy: RenewalPolicy, request: RenewalRequest): CaStep {
  if (state.ca === undefined) {
    // A staged CA is already trusted, so it is the best replacement for a CA that went missing.
    return state.next === undefined ? { kind: 'create', reason: 'no valid CA in the Secret' } : { kind: 'promote' };
  }
  if (state.next !== undefined) {
    return now.getTime() - state.next.stagedAt.getTime() >= policy.caOverlapMs ? { kind: 'promote' } : { kind: 'keep' };
  }
  if (request.rotateCa === true) return { kind: 'stage', reason: 'requested' };
  const left = notAfter(state.ca.cert).getTime() - now.getTime();
  if (left < policy.caRenewBeforeDays * DAY_MS) return { kind: 'stage', reason: 'CA expires soon' };
  return { kind: 'keep' };
}

function servingReason(
  state: CertState,
  ca: CaStep,
  now: Date,
  policy: RenewalPolicy,
  request: RenewalRequest,
): string | undefined {
  if (ca.kind === 'create' || ca.kind === 'promote') return 'new CA';
  const serving = state.serving;
  if (serving === undefined) return 'no valid serving certificate signed by the CA';
  if (request.renewServing === true) return 'requested';
  if (notAfter(serving.cert).getTime() - now.getTime() < policy.servingRenewBeforeDays * DAY_MS) return 'expires soon';
  if (!coversNames(serving.cert, policy.names)) return 'service names changed';
  return undefined;
}

function previousCaExpired(pem: string, now: Date): boolean {
  const cert = parseCertificate(pem);
  // state.ts keeps only a previous CA that parses; one that does not is of no use to anybody either.
  return cert === undefined || notAfter(cert).getTime() <= now.getTime();
}

/** Makes the keys and certificates the plan asks for; the result is the Secret's next content. */
export async function applyPlan(
  state: CertState,
  plan: RenewalPlan,
  now: Date,
  policy: RenewalPolicy,
): Promise<CertState> {
  let { ca, next, previousCaPem } = state;
  if (plan.dropPrevious) previousCaPem = undefined;
  switch (plan.ca.kind) {
    case 'create':
      ca = await createCa(now, policy.caValidityDays);
      next = undefined;
      break;
    case 'stage':
      next = { ca: await createCa(now, policy.caValidityDays), stagedAt: now };
      break;
    case 'promote':
      if (next !== undefined) {
        if (ca !== undefined) previousCaPem = ca.certPem;
        ca = next.ca;
        next = undefined;
      }
      break;
    case 'keep':
      break;
  }
  if (ca === undefined) throw new Error('internal error: no CA after applying a renewal plan');
  const serving =
    plan.issueServing === undefined
      ? state.serving
      : await issueServing(ca, policy.names, now, policy.servingValidityDays);
  return { ca, serving, next, previousCaPem, generation: state.generation + 1 };
}
