// Each check of preflight over plain objects: the good install passes, and each way it fails says why and what
// to do. The cases are tables: a change to the facts, and the result expected.
import { describe, expect, it } from 'vitest';
import {
  checkDeliverEnv,
  checkTrustedCreators,
  checkWebhookConfiguration,
  checkWebhookEndpoints,
} from '../../../src/cli/preflight/checks-install.js';
import {
  checkInjectionConfig,
  checkKubernetesVersion,
  checkSandboxCrd,
} from '../../../src/cli/preflight/checks-platform.js';
import type { CheckResult, PreflightFacts } from '../../../src/cli/preflight/facts.js';
import { checkInjectorImage } from '../../../src/cli/preflight/injector-image.js';
import {
  ABSENT,
  AGENT_KEY,
  crd,
  deployment,
  found,
  goodFacts,
  injectorDeployment,
  lease,
  NOW,
  sandbox,
  slice,
  unreadable,
  webhookConfiguration,
} from './facts-builder.js';

type Case = [what: string, change: (facts: PreflightFacts) => Partial<PreflightFacts>, expected: Partial<CheckResult>];

const CONTROLLER_USER = 'system:serviceaccount:sandbox-system:sandbox-controller-manager';
const withConfig = (data: Record<string, string>) => (f: PreflightFacts) => ({
  configMap: { ...f.configMap, read: found({ data }) },
});
const withController = (spec: Record<string, unknown>) => (f: PreflightFacts) => ({
  controller: { ...f.controller, read: found(deployment('sandbox-system', 'sandbox-controller-manager', spec)) },
});
const withInjector =
  (args: string[], env: Record<string, unknown>[] = [], image?: string) =>
  (): Partial<PreflightFacts> => ({
    injector: {
      namespace: 'sandbox-injector-system',
      name: 'sandbox-injector',
      read: found(injectorDeployment(args, env, image)),
    },
  });
const withLease = (read: PreflightFacts['lease']['read']) => (f: PreflightFacts) => ({ lease: { ...f.lease, read } });
const withSlices = (slices: Record<string, unknown>[]) => () => ({
  endpointSlices: { namespace: 'sandbox-injector-system', name: 'sandbox-injector', read: found(slices) },
});
const WRAPPER = (image: string) => [{ name: 'SANDBOX_INJECTOR_WRAPPER_IMAGE', value: image }];

function table(name: string, check: (facts: PreflightFacts) => CheckResult, cases: Case[]): void {
  describe(name, () => {
    it('passes on a good install, with no fix', () => {
      const result = check(goodFacts());
      expect(result).toMatchObject({ ok: true, fix: null });
    });
    it.each(cases)('%s', (_what, change, expected) => {
      const facts = goodFacts();
      expect(check({ ...facts, ...change(facts) })).toEqual(expect.objectContaining(expected));
    });
  });
}

const fails = (message: string, fix?: string): Partial<CheckResult> => ({
  ok: false,
  message,
  ...(fix === undefined ? {} : { fix }),
});
const passes = (message: string): Partial<CheckResult> => ({ ok: true, message, fix: null });

table('kubernetes-version', checkKubernetesVersion, [
  ['1.31 passes', () => ({}), passes('Kubernetes v1.31.2 (1.29 or later)')],
  [
    'a minor with a suffix ("29+") passes',
    () => ({ version: found({ major: '1', minor: '29+', gitVersion: 'v1.29.4-eks' }) }),
    passes('Kubernetes v1.29.4-eks (1.29 or later)'),
  ],
  [
    '1.28 fails',
    () => ({ version: found({ major: '1', minor: '28', gitVersion: 'v1.28.9' }) }),
    fails(
      'Kubernetes v1.28.9 is older than 1.29: the injected runtimes are native sidecars',
      'upgrade the cluster to 1.29 or later',
    ),
  ],
  [
    'no number fails',
    () => ({ version: found({ gitVersion: 'v?' }) }),
    fails('the API server reports no version number (v?)'),
  ],
]);

table('sandbox-crd', checkSandboxCrd, [
  ['served v1alpha1 passes', () => ({}), passes('CRD sandboxes.agents.kruise.io serves v1alpha1')],
  [
    'no CRD fails',
    () => ({ crd: ABSENT }),
    fails('CRD sandboxes.agents.kruise.io is not installed', 'install OpenKruise Agents (its CRDs) first'),
  ],
  [
    'v1alpha1 not served fails',
    () => ({
      crd: found(
        crd([
          { name: 'v1alpha1', served: false },
          { name: 'v1beta1', served: true },
        ]),
      ),
    }),
    fails('CRD sandboxes.agents.kruise.io does not serve v1alpha1 (versions: v1alpha1, v1beta1)'),
  ],
  [
    'not Established fails',
    () => ({ crd: found(crd(undefined, false)) }),
    fails('CRD sandboxes.agents.kruise.io is not Established yet'),
  ],
  [
    'a forbidden read fails',
    () => ({ crd: unreadable('GET ...: 403: forbidden') }),
    fails('cannot read CRD sandboxes.agents.kruise.io: GET ...: 403: forbidden'),
  ],
]);

table('injection-config', checkInjectionConfig, [
  [
    'every key parses: its runtimes',
    () => ({}),
    passes('ConfigMap sandbox-system/sandbox-injection-config: runtimes agent-runtime, csi'),
  ],
  [
    'no ConfigMap fails',
    (f) => ({ configMap: { ...f.configMap, read: ABSENT } }),
    fails('ConfigMap sandbox-system/sandbox-injection-config does not exist: nothing is injected'),
  ],
  [
    'a key that is not JSON fails, naming it',
    withConfig({ 'agent-runtime': AGENT_KEY, csi: '{"csiSidecar": [' }),
    fails(
      'ConfigMap sandbox-system/sandbox-injection-config: key csi: invalid JSON: Unexpected end of JSON input (runtimes agent-runtime parse)',
      'fix the key: kubectl -n sandbox-system edit configmap sandbox-injection-config',
    ),
  ],
  [
    'a key of the wrong type fails, as the webhook refuses it',
    withConfig({ csi: '{"csiSidecar": {"name": "x"}}' }),
    fails(
      'ConfigMap sandbox-system/sandbox-injection-config: key csi: field /csiSidecar must be array (no runtime parse)',
    ),
  ],
  [
    'an empty key fails',
    withConfig({ csi: ' ' }),
    fails('ConfigMap sandbox-system/sandbox-injection-config: key csi is empty (read as missing) (no runtime parse)'),
  ],
  ['no keys fails', withConfig({}), fails('ConfigMap sandbox-system/sandbox-injection-config defines no runtime')],
]);

table('trusted-creators', checkTrustedCreators, [
  [
    "the Deployment's list holds upstream's account",
    () => ({}),
    passes(
      `${CONTROLLER_USER} (Deployment sandbox-system/sandbox-controller-manager) is trusted by Deployment sandbox-injector-system/sandbox-injector`,
    ),
  ],
  [
    'a group of its namespace matches',
    withInjector(['--trusted-creators=group:system:serviceaccounts:sandbox-system']),
    { ok: true },
  ],
  [
    'a mismatched list fails, with the 403 every Sandbox pod would get',
    withInjector(['--trusted-creators=system:serviceaccount:sandbox-system:other']),
    fails(
      `${CONTROLLER_USER} (Deployment sandbox-system/sandbox-controller-manager) is not in "system:serviceaccount:sandbox-system:other" from Deployment sandbox-injector-system/sandbox-injector: every Sandbox pod would be denied (SI_CREATOR_UNTRUSTED, 403)`,
      `give serve --trusted-creators=${CONTROLLER_USER} (chart: trustedCreators)`,
    ),
  ],
  [
    "the controller's service account defaults to default",
    withController({}),
    fails(
      'system:serviceaccount:sandbox-system:default (Deployment sandbox-system/sandbox-controller-manager) is not in "system:serviceaccount:sandbox-system:sandbox-controller-manager" from Deployment sandbox-injector-system/sandbox-injector: every Sandbox pod would be denied (SI_CREATOR_UNTRUSTED, 403)',
    ),
  ],
  [
    'the list from the env var',
    withInjector([], [{ name: 'SANDBOX_INJECTOR_TRUSTED_CREATORS', value: CONTROLLER_USER }]),
    { ok: true },
  ],
  [
    '--trusted-creators wins over the Deployment',
    () => ({ trustedCreatorsFlag: 'someone' }),
    fails(
      `${CONTROLLER_USER} (Deployment sandbox-system/sandbox-controller-manager) is not in "someone" from --trusted-creators: every Sandbox pod would be denied (SI_CREATOR_UNTRUSTED, 403)`,
    ),
  ],
  [
    "not installed: the install's default",
    () => ({ injector: undefined }),
    passes(
      `${CONTROLLER_USER} (Deployment sandbox-system/sandbox-controller-manager) is trusted by the install's default (the webhook is not installed)`,
    ),
  ],
  [
    'serve without a list trusts everyone',
    withInjector([]),
    passes(
      `Deployment sandbox-injector-system/sandbox-injector trusts every creator (no --trusted-creators), ${CONTROLLER_USER} included`,
    ),
  ],
  [
    'no upstream controller fails',
    (f) => ({ controller: { ...f.controller, read: ABSENT } }),
    fails(
      "upstream's controller Deployment sandbox-system/sandbox-controller-manager not found",
      'install OpenKruise Agents, or give --controller-namespace and --controller-deployment',
    ),
  ],
  ['a bad list in the Deployment fails', withInjector(['--trusted-creators=a,,b']), { ok: false }],
]);

table('webhook-configuration', checkWebhookConfiguration, [
  [
    'a caBundle on each webhook passes',
    () => ({}),
    passes('MutatingWebhookConfiguration sandbox-injector: 1 webhook(s), each with a caBundle'),
  ],
  [
    'not installed fails',
    (f) => ({ webhookConfiguration: { ...f.webhookConfiguration, read: ABSENT } }),
    fails(
      'MutatingWebhookConfiguration sandbox-injector is not installed',
      'install the webhook (docs/install.md), or give --webhook-config-name',
    ),
  ],
  [
    'a missing caBundle fails',
    (f) => ({ webhookConfiguration: { ...f.webhookConfiguration, read: found(webhookConfiguration('')) } }),
    fails(
      'MutatingWebhookConfiguration sandbox-injector: webhook sandbox-injector.agents.kruise.io has no caBundle: kube-apiserver cannot trust the webhook',
    ),
  ],
]);

table('webhook-endpoints', checkWebhookEndpoints, [
  [
    'a ready endpoint passes',
    () => ({}),
    passes('Service sandbox-injector-system/sandbox-injector: 1 ready endpoint(s)'),
  ],
  ['an endpoint without conditions is ready', withSlices([slice(undefined)]), { ok: true }],
  [
    'no ready endpoint fails',
    withSlices([slice(false), slice(true, [])]),
    fails(
      'Service sandbox-injector-system/sandbox-injector has no ready endpoint: with failurePolicy Fail, every Sandbox pod is refused',
      "check the webhook's pods: kubectl -n sandbox-injector-system get pods,endpointslices",
    ),
  ],
  [
    'a URL webhook has no Service to check',
    () => ({ endpointSlices: undefined }),
    passes('the webhook is called by URL (clientConfig.url): no Service to check'),
  ],
]);

table('deliver-env', checkDeliverEnv, [
  [
    'Auto in use and the Lease held passes',
    () => ({}),
    passes(
      '1 Sandbox(es) use Auto, team-a/wrapped first; Lease sandbox-system/sandbox-injector-deliver-env is held by pod-a_1',
    ),
  ],
  [
    'no Auto: not needed',
    () => ({ sandboxes: found([sandbox('plain')]) }),
    passes('no Sandbox uses Auto: deliver-env is not needed (--auto checks it)'),
  ],
  [
    'no Lease fails',
    withLease(ABSENT),
    fails(
      '1 Sandbox(es) use Auto, team-a/wrapped first, and Lease sandbox-system/sandbox-injector-deliver-env does not exist: deliver-env has never run',
    ),
  ],
  [
    'an expired Lease is not held',
    withLease(found(lease('pod-a_1', NOW - 20_000, 15))),
    fails(
      '1 Sandbox(es) use Auto, team-a/wrapped first, and Lease sandbox-system/sandbox-injector-deliver-env held by pod-a_1 expired 5s ago: no replica delivers',
      "read deliver-env's pods and logs in namespace sandbox-system",
    ),
  ],
  [
    'a Lease without holder fails',
    withLease(found(lease('', NOW))),
    fails(
      '1 Sandbox(es) use Auto, team-a/wrapped first, and Lease sandbox-system/sandbox-injector-deliver-env has no holder: no replica delivers',
    ),
  ],
  [
    '--auto asks for it with no Sandbox',
    (f) => ({ autoFlag: true, sandboxes: found([]), ...withLease(ABSENT)(f) }),
    { ok: false },
  ],
  [
    'the policy from the annotation counts',
    () => ({
      sandboxes: found([
        {
          metadata: {
            namespace: 'n',
            name: 's',
            annotations: { 'agents.kruise.io/env-vars-injection-policy': 'Auto' },
          },
        },
      ]),
    }),
    { ok: true, message: expect.stringContaining('n/s first') as string },
  ],
]);

table('injector-image', checkInjectorImage, [
  [
    'a public registry passes',
    () => ({}),
    passes(
      'image ghcr.io/o/sandbox-injector:1 (Deployment sandbox-injector-system/sandbox-injector) is on public registry ghcr.io',
    ),
  ],
  [
    'a private registry with an Auto Sandbox without pull secret fails',
    withInjector([], WRAPPER('registry.corp.example/si:1')),
    fails(
      'image registry.corp.example/si:1 (Deployment sandbox-injector-system/sandbox-injector) is on private registry registry.corp.example, and Auto Sandbox team-a/wrapped has no image pull secret',
      'Sandbox pods that use Auto pull it: give them an imagePullSecret for registry.corp.example (spec.template.spec.imagePullSecrets, or on their service account)',
    ),
  ],
  [
    'a pull secret in the template passes',
    () => ({
      ...withInjector([], WRAPPER('registry.corp.example/si:1'))(),
      sandboxes: found([sandbox('w', { auto: true, pullSecret: true })]),
    }),
    { ok: true, message: expect.stringContaining('every Auto Sandbox has a pull secret') as string },
  ],
  [
    "a pull secret on the pod's service account passes",
    () => ({
      ...withInjector([], WRAPPER('registry.corp.example/si:1'))(),
      sandboxes: found([sandbox('w', { auto: true, account: 'runner' })]),
      serviceAccounts: new Map([['team-a/runner', found({ imagePullSecrets: [{ name: 'regcred' }] })]]),
    }),
    { ok: true },
  ],
  [
    '--image before install gives the hint',
    () => ({ injector: undefined, imageFlag: 'localhost:5000/si:1', sandboxes: found([]) }),
    passes(
      'image localhost:5000/si:1 (--image) is on private registry localhost:5000; no Sandbox uses Auto yet. Sandbox pods that use Auto pull it: give them an imagePullSecret for localhost:5000 (spec.template.spec.imagePullSecrets, or on their service account)',
    ),
  ],
  [
    'no wrapper image: nothing to pull',
    withInjector([]),
    passes('the webhook adds no wrapper init container: Sandbox pods pull no injector image'),
  ],
  [
    'not installed and no --image: not checked',
    () => ({ injector: undefined }),
    passes('the webhook is not installed and no --image is given: not checked'),
  ],
]);
