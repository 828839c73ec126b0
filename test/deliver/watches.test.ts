import { Agent as HttpsAgent } from 'node:https';
/**
 * What deliver-env's caches keep of a Sandbox and a pod: exactly the listed fields, whatever else the objects
 * carry. The fields the delivery decision reads are checked through claimDecision itself, so a field it starts
 * to read without being added to the lists fails here.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { claimDecision } from '../../src/deliver/claim.js';
import { stripPod, stripSandbox, type SandboxObject } from '../../src/deliver/watches.js';
import type { Pod } from '../../src/injection/index.js';
import { wrappedSandboxPod } from '../support/wrapped-sandbox-pod.js';

const managedFields = [{ manager: 'kubectl', operation: 'Apply', fieldsV1: { 'f:spec': { 'f:x': {} } } }];

// Typed after the fact: DeliverySandbox declares only what delivery reads, and a Sandbox carries more.
const sandbox = {
  apiVersion: 'agents.kruise.io/v1alpha1',
  kind: 'Sandbox',
  metadata: {
    name: 'sbx',
    namespace: 'ns',
    uid: 'sandbox-uid',
    resourceVersion: '12',
    creationTimestamp: '2026-01-01T00:00:00Z',
    deletionTimestamp: '2026-01-02T00:00:00Z',
    generation: 3,
    managedFields,
    labels: { 'agents.kruise.io/sandbox-claimed': 'true', 'agents.kruise.io/sandbox-pool': 'pool-a', team: 'x' },
    annotations: {
      'agents.kruise.io/init-runtime-request': JSON.stringify({ envVars: { A: '1' }, accessToken: 't' }),
      'agents.kruise.io/runtime-url': 'http://10.0.0.9:49983',
      'agents.kruise.io/runtime-access-token': 'tok',
      'agents.kruise.io/claim-timestamp': '2026-01-01T00:00:01Z',
      'agents.kruise.io/runtime-tls-port': '49984',
      'e2b.agents.kruise.io/envd-url': 'http://10.0.0.9:49983',
      'e2b.agents.kruise.io/envd-access-token': 'legacy',
      'agents.kruise.io/runtimes': 'agent-runtime',
      'kubectl.kubernetes.io/last-applied-configuration': 'x'.repeat(10_000),
    },
  },
  spec: { template: { spec: { containers: [{ name: 'main', image: 'app:1' }] } } },
  status: { phase: 'Running', podInfo: { podIP: '10.0.0.9', podUID: 'pod-uid', nodeName: 'n1' }, conditions: [] },
} as SandboxObject;

const pod = (): V1Pod => {
  const made = wrappedSandboxPod({ sandbox: 'sbx', sandboxUid: 'sandbox-uid', namespace: 'ns' }) as V1Pod;
  const metadata = made.metadata ?? {};
  made.metadata = {
    ...metadata,
    uid: 'pod-uid',
    resourceVersion: '30',
    creationTimestamp: new Date('2026-01-01T00:00:00Z'),
    managedFields,
    labels: { ...metadata.labels, 'pod-template-hash': 'abc' },
    annotations: { ...metadata.annotations, 'agents.kruise.io/runtimes': 'agent-runtime' },
    ownerReferences: [
      { apiVersion: 'v1', kind: 'Other', name: 'o', uid: 'o-uid', controller: false, blockOwnerDeletion: true },
      ...(metadata.ownerReferences ?? []).map((ref) => ({ ...ref, blockOwnerDeletion: true })),
    ],
  };
  made.status = {
    phase: 'Running',
    podIP: '10.0.0.9',
    hostIP: '192.168.0.1',
    conditions: [{ type: 'Ready', status: 'True' }],
  };
  return made;
};

describe('stripSandbox', () => {
  it('keeps identity, the claimed label, the delivery annotations and status.podInfo.{podIP, podUID}, nothing else', () => {
    expect(stripSandbox(sandbox)).toEqual({
      metadata: {
        name: 'sbx',
        namespace: 'ns',
        uid: 'sandbox-uid',
        resourceVersion: '12',
        creationTimestamp: '2026-01-01T00:00:00Z',
        deletionTimestamp: '2026-01-02T00:00:00Z',
        labels: { 'agents.kruise.io/sandbox-claimed': 'true' },
        annotations: {
          'agents.kruise.io/init-runtime-request': JSON.stringify({ envVars: { A: '1' }, accessToken: 't' }),
          'agents.kruise.io/runtime-url': 'http://10.0.0.9:49983',
          'agents.kruise.io/runtime-access-token': 'tok',
          'agents.kruise.io/claim-timestamp': '2026-01-01T00:00:01Z',
          'agents.kruise.io/runtime-tls-port': '49984',
          'e2b.agents.kruise.io/envd-url': 'http://10.0.0.9:49983',
          'e2b.agents.kruise.io/envd-access-token': 'legacy',
        },
      },
      status: { podInfo: { podIP: '10.0.0.9', podUID: 'pod-uid' } },
    });
  });

  it('leaves out what is absent, and does not change the object it reads', () => {
    const bare = { metadata: { name: 'b', namespace: 'ns', labels: { team: 'x' } }, status: {} };
    expect(stripSandbox(bare)).toEqual({ metadata: { name: 'b', namespace: 'ns' } });
    expect(bare.metadata.labels).toEqual({ team: 'x' });
  });
});

describe('stripPod', () => {
  it('keeps identity, the controller owner reference, the created-by label, the status annotation, podIP and phase', () => {
    expect(stripPod(pod())).toEqual({
      metadata: {
        name: 'sbx-pod',
        namespace: 'ns',
        uid: 'pod-uid',
        resourceVersion: '30',
        creationTimestamp: new Date('2026-01-01T00:00:00Z'),
        ownerReferences: [
          {
            apiVersion: 'agents.kruise.io/v1alpha1',
            kind: 'Sandbox',
            name: 'sbx',
            uid: 'sandbox-uid',
            controller: true,
          },
        ],
        labels: { 'agents.kruise.io/created-by': 'sandbox' },
        annotations: {
          'agents.kruise.io/runtime-injection-status':
            pod().metadata?.annotations?.['agents.kruise.io/runtime-injection-status'],
        },
      },
      status: { podIP: '10.0.0.9', phase: 'Running' },
    });
  });

  it('keeps a pod without owner references without any', () => {
    const orphan = pod();
    delete orphan.metadata?.ownerReferences;
    expect(stripPod(orphan).metadata?.ownerReferences).toBeUndefined();
  });

  it('gives the delivery decision what the whole objects give it', () => {
    // The Sandbox advertises a TLS port: with a bundle, the decision is a delivery over HTTPS.
    const settings = {
      runtimePort: 49983,
      trustRuntimeUrl: false,
      tls: { kind: 'ok' as const, agent: new HttpsAgent(), version: 1 },
    };
    const whole = claimDecision(sandbox, pod() as Pod, settings);
    expect(whole.kind).toBe('deliver');
    expect(claimDecision(stripSandbox(sandbox), stripPod(pod()) as Pod, settings)).toEqual(whole);
  });
});
