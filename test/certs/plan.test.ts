import { beforeAll, describe, expect, it } from 'vitest';
import { DAY_MS, createCa, issueServing, serviceSubjectNames, type CertifiedKey } from '../../src/certs/pki.js';
import {
  PolicyError,
  applyPlan,
  checkPolicy,
  planIsEmpty,
  planRenewal,
  type RenewalPolicy,
} from '../../src/certs/plan.js';
import { EMPTY_STATE, trustBundle, type CertState } from '../../src/certs/state.js';

const T0 = new Date('2030-01-01T00:00:00Z');
const at = (days: number, ms = 0): Date => new Date(T0.getTime() + days * DAY_MS + ms);

const policy: RenewalPolicy = {
  names: serviceSubjectNames('sandbox-injector', 'sandbox-system', ['127.0.0.1']),
  servingValidityDays: 365,
  servingRenewBeforeDays: 30,
  caValidityDays: 3650,
  caRenewBeforeDays: 365,
  caOverlapMs: 10 * 60 * 1000,
};

let ca: CertifiedKey;
let otherCa: CertifiedKey;
let serving: CertifiedKey;
let fresh: CertState;

beforeAll(async () => {
  [ca, otherCa] = await Promise.all([createCa(T0, 3650), createCa(T0, 3650)]);
  serving = await issueServing(ca, policy.names, T0, 365);
  fresh = { ca, serving, next: undefined, previousCaPem: undefined, generation: 1 };
});

describe('planRenewal', () => {
  it('creates a CA and a serving certificate for an empty Secret', () => {
    const plan = planRenewal(EMPTY_STATE, T0, policy);
    expect(plan).toEqual({
      ca: { kind: 'create', reason: 'no valid CA in the Secret' },
      issueServing: 'new CA',
      dropPrevious: false,
    });
  });

  it('leaves a fresh Secret alone', () => {
    expect(planIsEmpty(planRenewal(fresh, at(1), policy))).toBe(true);
  });

  const servingCases: [string, () => [CertState, Date, { renewServing?: boolean }], string][] = [
    ['renews the serving certificate inside the renewal margin', () => [fresh, at(336), {}], 'expires soon'],
    ['renews on request', () => [fresh, at(1), { renewServing: true }], 'requested'],
    [
      're-issues a missing serving certificate',
      () => [{ ...fresh, serving: undefined }, at(1), {}],
      'no valid serving certificate signed by the CA',
    ],
  ];
  it.each(servingCases)('%s', (_name, make, reason) => {
    const [state, now, request] = make();
    expect(planRenewal(state, now, policy, request)).toEqual({
      ca: { kind: 'keep' },
      issueServing: reason,
      dropPrevious: false,
    });
  });

  it('keeps the serving certificate one day before the margin', () => {
    expect(planRenewal(fresh, at(334), policy).issueServing).toBeUndefined();
  });

  it('re-issues when the service names are no longer covered', () => {
    const wider = {
      ...policy,
      names: serviceSubjectNames('sandbox-injector', 'sandbox-system', ['127.0.0.1', '10.0.0.7']),
    };
    expect(planRenewal(fresh, at(1), wider).issueServing).toBe('service names changed');
    // Fewer names than the certificate has is not a reason: a replica still running with the old flags
    // must not fight one with the new flags.
    const narrower = { ...policy, names: serviceSubjectNames('sandbox-injector', 'sandbox-system') };
    expect(planRenewal(fresh, at(1), narrower).issueServing).toBeUndefined();
  });

  it('stages a new CA when the CA has less than caRenewBeforeDays left, keeping the serving certificate', () => {
    const late = { ...fresh, serving: undefined };
    expect(planRenewal(fresh, at(3650 - 364), policy).ca).toEqual({ kind: 'stage', reason: 'CA expires soon' });
    expect(planRenewal(late, at(3650 - 366), policy).ca).toEqual({ kind: 'keep' });
    expect(planRenewal(fresh, at(1), policy, { rotateCa: true })).toEqual({
      ca: { kind: 'stage', reason: 'requested' },
      issueServing: undefined,
      dropPrevious: false,
    });
  });

  it('promotes the staged CA only after the overlap, and then signs with it', () => {
    const staged: CertState = { ...fresh, next: { ca: otherCa, stagedAt: at(1) } };
    expect(planRenewal(staged, at(1, policy.caOverlapMs - 1), policy, { rotateCa: true })).toEqual({
      ca: { kind: 'keep' },
      issueServing: undefined,
      dropPrevious: false,
    });
    expect(planRenewal(staged, at(1, policy.caOverlapMs), policy)).toEqual({
      ca: { kind: 'promote' },
      issueServing: 'new CA',
      dropPrevious: false,
    });
  });

  it('promotes a staged CA at once when the current CA is gone', () => {
    const state: CertState = { ...EMPTY_STATE, next: { ca: otherCa, stagedAt: at(1) } };
    expect(planRenewal(state, at(1), policy).ca).toEqual({ kind: 'promote' });
  });

  it('drops the previous CA once it has expired', () => {
    const state: CertState = { ...fresh, previousCaPem: otherCa.certPem };
    expect(planRenewal(state, at(3649), policy).dropPrevious).toBe(false);
    expect(planRenewal(state, at(3651), policy).dropPrevious).toBe(true);
  });
});

describe('applyPlan: a CA rotation keeps every signing CA trusted', () => {
  it('stages, promotes, and keeps the old CA as previous until the next promotion', async () => {
    const staged = await applyPlan(fresh, planRenewal(fresh, at(1), policy, { rotateCa: true }), at(1), policy);
    expect(staged.ca).toBe(ca);
    expect(staged.serving).toBe(serving);
    expect(staged.generation).toBe(2);
    expect(trustBundle(staged)).toHaveLength(2);
    const newCa = staged.next?.ca;
    expect(newCa).toBeDefined();

    const later = at(1, policy.caOverlapMs);
    const promoted = await applyPlan(staged, planRenewal(staged, later, policy), later, policy);
    expect(promoted.ca).toBe(newCa);
    expect(promoted.next).toBeUndefined();
    expect(promoted.previousCaPem).toBe(ca.certPem);
    expect(promoted.serving?.cert.checkIssued(newCa?.cert ?? ca.cert)).toBe(true);
    expect(trustBundle(promoted)).toEqual([ca.certPem, newCa?.certPem]);

    // The next rotation keeps three CAs while staging; its promotion retires the oldest.
    const staged2 = await applyPlan(promoted, planRenewal(promoted, later, policy, { rotateCa: true }), later, policy);
    expect(trustBundle(staged2)).toHaveLength(3);
    const later2 = new Date(later.getTime() + policy.caOverlapMs);
    const promoted2 = await applyPlan(staged2, planRenewal(staged2, later2, policy), later2, policy);
    expect(promoted2.previousCaPem).toBe(newCa?.certPem);
    expect(trustBundle(promoted2)).not.toContain(ca.certPem);
  });

  it('never issues a serving certificate that outlives its CA', async () => {
    const late = at(3650 - 100);
    const state = await applyPlan(fresh, planRenewal(fresh, late, policy, { renewServing: true }), late, policy);
    expect(new Date(state.serving?.cert.validTo ?? 0).getTime()).toBeLessThanOrEqual(
      new Date(ca.cert.validTo).getTime(),
    );
  });
});

describe('checkPolicy', () => {
  const bad: [string, Partial<RenewalPolicy>, RegExp][] = [
    [
      'a renewal margin as long as the validity',
      { servingRenewBeforeDays: 365 },
      /renewBeforeDays \(365\) must be at least 0 and less than validityDays/,
    ],
    ['a zero validity', { servingValidityDays: 0 }, /validityDays must be greater than 0/],
    [
      'a CA margin as long as the CA',
      { caRenewBeforeDays: 3650 },
      /caRenewBeforeDays \(3650\) must be less than caValidityDays/,
    ],
    ['a CA margin inside the serving margin', { caRenewBeforeDays: 20 }, /must exceed renewBeforeDays \(30\)/],
    ['a negative overlap', { caOverlapMs: -1 }, /caOverlapMs must be at least 0/],
  ];
  it.each(bad)('refuses %s', (_name, change, message) => {
    expect(() => checkPolicy({ ...policy, ...change })).toThrow(PolicyError);
    expect(() => checkPolicy({ ...policy, ...change })).toThrow(message);
  });

  it('accepts the defaults', () => {
    expect(() => checkPolicy(policy)).not.toThrow();
  });
});
