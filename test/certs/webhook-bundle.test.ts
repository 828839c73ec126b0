import type { V1MutatingWebhookConfiguration } from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { createCa, type CertifiedKey } from '../../src/certs/pki.js';
import { ANNOTATIONS } from '../../src/certs/state.js';
import { bundleTrusts, decideBundle, encodeBundle, splitPem } from '../../src/certs/webhook-bundle.js';

let oldCa: CertifiedKey;
let newCa: CertifiedKey;

beforeAll(async () => {
  const now = new Date('2030-01-01T00:00:00Z');
  [oldCa, newCa] = await Promise.all([createCa(now, 10), createCa(now, 10)]);
});

function config(caBundles: (string | undefined)[], source?: string): V1MutatingWebhookConfiguration {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: {
      name: 'sandbox-injector',
      resourceVersion: '9',
      annotations: source === undefined ? { keep: 'me' } : { keep: 'me', [ANNOTATIONS.bundleSource]: source },
      managedFields: [{ manager: 'kubectl' }],
    },
    webhooks: caBundles.map((caBundle, i) => ({
      name: `w${i}.agents.kruise.io`,
      admissionReviewVersions: ['v1'],
      sideEffects: 'None',
      clientConfig: { service: { name: 'sandbox-injector', namespace: 'sandbox-system' }, caBundle },
    })),
  };
}

describe('decideBundle', () => {
  it('sets every webhook entry and records the source, keeping the resourceVersion', () => {
    const decision = decideBundle(config([undefined, encodeBundle([oldCa.certPem])]), [oldCa.certPem, newCa.certPem], {
      secretUid: 'u1',
      generation: 3,
    });
    expect(decision.kind).toBe('update');
    if (decision.kind !== 'update') return;
    expect(decision.changedWebhooks).toBe(2);
    expect(decision.body.metadata?.resourceVersion).toBe('9');
    expect(decision.body.metadata?.managedFields).toBeUndefined();
    expect(decision.body.metadata?.annotations).toEqual({ keep: 'me', [ANNOTATIONS.bundleSource]: 'u1/3' });
    for (const webhook of decision.body.webhooks ?? []) {
      expect(splitPem(Buffer.from(webhook.clientConfig.caBundle ?? '', 'base64').toString('utf8'))).toEqual([
        oldCa.certPem,
        newCa.certPem,
      ]);
    }
    expect(bundleTrusts(decision.body, newCa.certPem)).toBe(true);
  });

  it('leaves an equal bundle alone', () => {
    const bundle = encodeBundle([oldCa.certPem]);
    expect(decideBundle(config([bundle, bundle]), [oldCa.certPem], { secretUid: 'u1', generation: 1 })).toEqual({
      kind: 'in-sync',
    });
  });

  it('does not replace a bundle written from a later generation of the same Secret', () => {
    const stale = config([encodeBundle([oldCa.certPem, newCa.certPem])], 'u1/5');
    expect(decideBundle(stale, [oldCa.certPem], { secretUid: 'u1', generation: 4 })).toEqual({
      kind: 'newer',
      source: { secretUid: 'u1', generation: 5 },
    });
    // A re-created Secret starts counting again: a different uid is never "older".
    expect(decideBundle(stale, [oldCa.certPem], { secretUid: 'u2', generation: 1 }).kind).toBe('update');
  });
});

describe('bundleTrusts', () => {
  it('requires the CA in every entry', () => {
    expect(
      bundleTrusts(
        config([encodeBundle([oldCa.certPem, newCa.certPem]), encodeBundle([oldCa.certPem])]),
        newCa.certPem,
      ),
    ).toBe(false);
    expect(bundleTrusts(config([encodeBundle([newCa.certPem])]), newCa.certPem.replace(/\n/g, '\r\n'))).toBe(true);
    expect(bundleTrusts(config([undefined]), oldCa.certPem)).toBe(false);
  });
});
