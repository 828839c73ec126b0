import fastJsonPatch from 'fast-json-patch';
import { describe, expect, it } from 'vitest';
import type { ReviewDeps } from '../../../src/admission/review.js';
import { explainPod, type ExplainInput, type WebhookCheck } from '../../../src/cli/explain/explanation.js';
import { renderText } from '../../../src/cli/explain/render.js';
import { evaluateWebhooks } from '../../../src/cli/explain/webhook-match.js';
import { STATUS_ANNOTATION, type Pod } from '../../../src/injection/index.js';
import { InjectionConfigStore } from '../../../src/config/injection-config.js';
import { runtimesFromOwner, type Sandbox } from '../../../src/admission/sandbox-runtimes.js';
import { runtimesFromAnnotations } from '../../../src/sandbox/runtime-selection.js';
import { AGENT_CONFIG, CSI_CONFIG, PROXY_CONFIG, pod } from '../../support/builders.js';

const RUNTIMES = 'agents.kruise.io/runtimes';
const POLICY = 'agents.kruise.io/env-vars-injection-policy';
const ALL_KEYS = {
  'agent-runtime': JSON.stringify(AGENT_CONFIG),
  csi: JSON.stringify(CSI_CONFIG),
  'traffic-proxy': JSON.stringify(PROXY_CONFIG),
};

function storeOf(...versions: (Record<string, string> | undefined)[]): InjectionConfigStore {
  const store = new InjectionConfigStore('sandbox-system/sandbox-injection-config');
  for (const data of versions) store.update(data);
  return store;
}

function annotated(runtimes: string, extra: Partial<Pod['spec']> = {}, policy?: string): Pod {
  const annotations: Record<string, string> = {
    [RUNTIMES]: runtimes,
    ...(policy === undefined ? {} : { [POLICY]: policy }),
  };
  return pod([{ name: 'main', image: 'python:3.12', command: ['python', 'app.py'] }], extra, {
    name: 'p',
    namespace: 'team-a',
    annotations,
  });
}

function explain(
  input: Pod,
  store: InjectionConfigStore,
  more: Partial<ExplainInput> = {},
  selectRuntimes: ReviewDeps['selectRuntimes'] = runtimesFromAnnotations,
) {
  return explainPod({
    pod: input,
    namespace: 'team-a',
    origin: 'test',
    webhook: { state: 'offline' },
    deps: { config: () => store.snapshot(), selectRuntimes },
    ...more,
  });
}

describe('explainPod', () => {
  it('gives each asked runtime its fate from the status the review records: injected, present, skipped with the reason', async () => {
    const input = annotated('agent-runtime,csi,traffic-proxy', {
      initContainers: [{ name: 'csi-sidecar', image: 'csi:1', restartPolicy: 'Always' }],
    });
    input.spec.containers.push({ name: 'traffic-proxy', image: 'someone-else:1' });
    const explanation = await explain(input, storeOf(ALL_KEYS));
    expect(explanation.decision).toBe('injected');
    expect(explanation.runtimes).toEqual([
      { runtime: 'agent-runtime', fate: 'injected', earlier: false },
      { runtime: 'csi', fate: 'present', earlier: false },
      {
        runtime: 'traffic-proxy',
        fate: 'skipped',
        reason: 'container-name-conflict',
        message: expect.stringContaining('traffic-proxy') as unknown,
        earlier: false,
      },
    ]);
    expect(explanation.warnings.some((w) => w.startsWith('pod team-a/p: traffic-proxy: skipped'))).toBe(true);
    // The status annotation, long with the skip's message, stays one diff line rather than folded YAML.
    const added = explanation.diff.split('\n').filter((line) => line.startsWith('+'));
    expect(added.filter((line) => line.includes(STATUS_ANNOTATION))).toHaveLength(1);
    expect(added.find((line) => line.includes(STATUS_ANNOTATION))).toMatch(
      /"wrapped":\[\],"revision":"sha256:[0-9a-f]{16}"\}'$/,
    );
  });

  it('gives the patch the server answers with, and a diff that shows the same change', async () => {
    const input = annotated('agent-runtime', {}, 'Auto');
    const explanation = await explain(input, storeOf(ALL_KEYS));
    const admitted = fastJsonPatch.applyPatch(structuredClone(input), explanation.patch, true, false).newDocument;
    expect(admitted.spec.initContainers?.map((c) => c.name)).toEqual(['agent-runtime']);
    expect(explanation.wrapped).toEqual(['main']);
    expect(explanation.diff).toMatch(/^--- pod team-a\/p as created\n\+\+\+ pod team-a\/p as admitted\n@@ /);
    expect(explanation.diff).toContain('\n+    - name: agent-runtime\n');
    expect(explanation.diff).toContain(`\n+    ${STATUS_ANNOTATION}: `);
    expect(explanation.diff).toContain('\n+        - /var/sandbox/run_with_envs.sh\n');
  });

  it("shows traffic-proxy's health-probe rewrite: the proxy, and the probes and hooks it now takes", async () => {
    const proxied = {
      ...ALL_KEYS,
      'traffic-proxy': JSON.stringify({ containers: [{ name: 'istio-proxy', image: 'proxy:1' }] }),
    };
    const input = pod(
      [
        {
          name: 'main',
          image: 'python:3.12',
          readinessProbe: { tcpSocket: { port: 8080 } },
          lifecycle: { preStop: { httpGet: { path: '/drain', port: 8080 } } },
        },
      ],
      {},
      {
        name: 'p',
        namespace: 'team-a',
        annotations: { [RUNTIMES]: 'traffic-proxy', 'networking.agents.kruise.io/health-probe-rewrite': 'true' },
      },
    );
    const explanation = await explain(input, storeOf(proxied));
    expect(explanation.healthProbeRewrite).toEqual({
      proxy: 'istio-proxy',
      probes: ['main/readinessProbe', 'main/preStop'],
    });
    const text = renderText(explanation);
    expect(text).toContain(
      '  health probes rewritten through proxy "istio-proxy": main/readinessProbe, main/preStop\n',
    );
    expect(explanation.diff).toContain('+          path: /app-health/main/readyz\n');
    expect(explanation.diff).toContain('+          value: \'{"/app-health/main/readyz":{"tcpSocket":{"port":8080}},');

    // Not asked for: nothing said.
    const plain = await explain(annotated('traffic-proxy'), storeOf(proxied));
    expect(plain.healthProbeRewrite).toBeUndefined();
    expect(renderText(plain)).not.toContain('health probes');
  });

  it("says where the runtimes and the policy came from, through the server's own Sandbox resolution", async () => {
    const sandbox: Sandbox = {
      metadata: { name: 'sbx', namespace: 'team-a', uid: 'uid-1', annotations: { [POLICY]: 'Auto' } },
      spec: { runtimes: [{ name: 'csi' }] },
    };
    const owned = annotated('agent-runtime');
    owned.metadata.ownerReferences = [
      { apiVersion: 'agents.kruise.io/v1alpha1', kind: 'Sandbox', name: 'sbx', uid: 'uid-1', controller: true },
    ];
    const explanation = await explain(owned, storeOf(ALL_KEYS), {}, (p, request) =>
      runtimesFromOwner(p, request, () => Promise.resolve(sandbox), false),
    );
    expect(explanation.selection).toEqual({
      runtimes: ['csi'],
      runtimesFrom: 'Sandbox team-a/sbx: spec.runtimes',
      policy: 'Auto',
      policyFrom: `Sandbox team-a/sbx: annotation ${POLICY}`,
    });
  });

  it('says so when no source sets the policy', async () => {
    const explanation = await explain(annotated('csi'), storeOf(ALL_KEYS));
    expect(explanation.selection).toEqual({
      runtimes: ['csi'],
      runtimesFrom: `annotation ${RUNTIMES}`,
      policy: 'None',
    });
    expect(renderText(explanation)).toContain('  policy:   None  (set nowhere: None by default)\n');
  });

  it('reports each asked key: valid, on its last valid version, invalid, missing', async () => {
    const store = storeOf(ALL_KEYS, {
      'agent-runtime': '{"csiSidecar": 3}',
      csi: JSON.stringify(CSI_CONFIG),
      gpu: 'not json',
    });
    const explanation = await explain(annotated('agent-runtime,csi,gpu,traffic-proxy'), store);
    expect(explanation.configMap).toEqual({
      name: 'sandbox-system/sandbox-injection-config',
      exists: true,
      keys: [
        { key: 'agent-runtime', state: 'last-valid', error: expect.any(String) as unknown },
        { key: 'csi', state: 'valid' },
        { key: 'gpu', state: 'invalid', error: expect.stringContaining('JSON') as unknown },
        { key: 'traffic-proxy', state: 'missing' },
      ],
    });
    expect(explanation.decision).toBe('denied');
    expect(explanation.denial).toMatchObject({ code: 'SI_RUNTIME_CONFIG_UNUSABLE', status: 500 });
    expect(explanation.runtimes.map((r) => r.fate)).toEqual(['none', 'none', 'none', 'none']);
  });

  it('injects from a key on its last valid version, with the warning the server gives', async () => {
    const explanation = await explain(annotated('agent-runtime'), storeOf(ALL_KEYS, { 'agent-runtime': '{' }));
    expect(explanation.runtimes).toEqual([{ runtime: 'agent-runtime', fate: 'injected', earlier: false }]);
    expect(explanation.warnings.join('\n')).toContain('using its last valid version');
  });

  it('says nothing is injected when the ConfigMap does not exist', async () => {
    const explanation = await explain(annotated('csi'), storeOf(undefined));
    expect(explanation.configMap).toEqual({ name: 'sandbox-system/sandbox-injection-config', exists: false, keys: [] });
    expect(explanation.runtimes).toEqual([
      { runtime: 'csi', fate: 'none', why: expect.stringContaining('does not exist') as unknown },
    ]);
    expect(explanation.patch).toEqual([]);
    expect(explanation.diff).toBe('');
  });

  it('reads a pod the webhook admitted before as settled: its recorded fates, no patch', async () => {
    const store = storeOf(ALL_KEYS);
    const first = await explain(annotated('agent-runtime'), store);
    const admitted = fastJsonPatch.applyPatch(annotated('agent-runtime'), first.patch, true, false).newDocument;
    const again = await explain(admitted, store);
    expect(again.runtimes).toEqual([{ runtime: 'agent-runtime', fate: 'injected', earlier: true }]);
    expect(again.patch).toEqual([]);
    expect(again.decision).toBe('unchanged');
  });

  it('shows the config revision: what the admission records, then on the admitted pod against the config in force', async () => {
    const store = storeOf(ALL_KEYS);
    const first = await explain(annotated('agent-runtime'), store);
    const snapshot = store.snapshot();
    const current = snapshot.present ? snapshot.revision(['agent-runtime']) : undefined;
    expect(first.revision).toEqual({ admitted: current, current });
    expect(renderText(first)).toContain(
      `Config revision: this admission records ${current}; the config in force gives ${current} for agent-runtime\n`,
    );
    const admitted = fastJsonPatch.applyPatch(annotated('agent-runtime'), first.patch, true, false).newDocument;
    expect(renderText(await explain(admitted, store))).toContain(
      `Config revision: recorded on the pod ${current}; the config in force gives ${current} for agent-runtime: the same\n`,
    );
    const edited = storeOf({
      ...ALL_KEYS,
      'agent-runtime': JSON.stringify({ ...AGENT_CONFIG, volume: [{ name: 'v2' }] }),
    });
    const later = await explain(admitted, edited);
    expect(later.revision.recorded).toBe(current);
    expect(later.revision.current).not.toBe(current);
    expect(renderText(later)).toMatch(
      /^Config revision: recorded on the pod sha256:\w+; the config in force gives sha256:\w+ for agent-runtime: it differs$/m,
    );
  });

  it('shows the denial when the runtimes cannot be chosen', async () => {
    const owned = annotated('csi');
    owned.metadata.ownerReferences = [
      { apiVersion: 'agents.kruise.io/v1alpha1', kind: 'Sandbox', name: 'gone', uid: 'u', controller: true },
    ];
    const explanation = await explain(owned, storeOf(ALL_KEYS), {}, (p, request) =>
      runtimesFromOwner(p, request, () => Promise.resolve(undefined), false),
    );
    expect(explanation.selection).toBeUndefined();
    expect(explanation.denial).toMatchObject({ code: 'SI_SANDBOX_NOT_FOUND', status: 404 });
    expect(renderText(explanation)).toContain(
      'Runtimes and policy: not chosen, the pod is denied first (SI_SANDBOX_NOT_FOUND)',
    );
  });
});

describe('renderText', () => {
  const checked = (podLabels: Record<string, string>): WebhookCheck => {
    const webhooks = evaluateWebhooks(
      [
        {
          name: 'w.example.com',
          rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] }],
          objectSelector: { matchLabels: { 'agents.kruise.io/created-by': 'sandbox' } },
        },
      ],
      { pod: podLabels, namespace: {} },
    );
    return {
      state: 'checked',
      configuration: 'sandbox-injector',
      selected: webhooks.some((w) => w.selected),
      webhooks,
      notes: [],
    };
  };

  it('prints every section for a selected pod, the fates and the diff', async () => {
    const text = renderText(
      await explain(annotated('agent-runtime,csi'), storeOf(ALL_KEYS), {
        webhook: checked({ 'agents.kruise.io/created-by': 'sandbox' }),
      }),
    );
    const lines = text.split('\n');
    expect(lines[0]).toBe('Pod team-a/p (test)');
    expect(lines).toContain('Webhook selection (MutatingWebhookConfiguration sandbox-injector): selected');
    expect(lines).toContain('  webhook w.example.com: selects this pod');
    expect(lines).toContain(`  runtimes: agent-runtime, csi  from annotation ${RUNTIMES}`);
    expect(lines).toContain('  key csi: valid');
    expect(lines).toContain('Result: injected');
    expect(lines).toContain('  agent-runtime: injected');
    expect(lines).toContain('--- pod team-a/p as created');
    expect(text).toMatch(/^Patch: \d+ JSON patch operations, as a diff of the pod$/m);
  });

  it('names the failing selector term and calls the result hypothetical for an unselected pod', async () => {
    const text = renderText(await explain(annotated('csi'), storeOf(ALL_KEYS), { webhook: checked({}) }));
    expect(text).toContain(
      'Webhook selection (MutatingWebhookConfiguration sandbox-injector): NOT selected: kube-apiserver never calls the webhook for this pod',
    );
    expect(text).toContain(
      '    objectSelector (pod labels): FAILS\n      matchLabels agents.kruise.io/created-by=sandbox: label agents.kruise.io/created-by is not set\n',
    );
    expect(text).toContain('Result if the webhook were called: injected');
  });

  it('says when the selectors could not be checked, or the configuration is not installed', async () => {
    expect(renderText(await explain(annotated('csi'), storeOf(ALL_KEYS)))).toContain(
      'Webhook selection: not checked offline',
    );
    const missing = await explain(annotated('csi'), storeOf(ALL_KEYS), {
      webhook: { state: 'not-installed', configuration: 'si' },
    });
    expect(renderText(missing)).toContain('MutatingWebhookConfiguration si is not installed');
  });

  it("prints the pool pod's state and why, with its pool, when the explanation has one", async () => {
    const explanation = await explain(annotated('csi'), storeOf(ALL_KEYS), {
      poolPod: {
        state: 'stale',
        reason: 'it records sha256:1, the config in force gives sha256:2 for csi',
        pool: 'team-a/pool',
      },
    });
    expect(explanation.poolPod).toEqual({ state: 'stale', reason: expect.any(String) as unknown, pool: 'team-a/pool' });
    expect(renderText(explanation)).toContain(
      'Pool pod (as deliver-env judges it, pool team-a/pool): stale: it records sha256:1, the config in force gives sha256:2 for csi\n',
    );
    expect(renderText(await explain(annotated('csi'), storeOf(ALL_KEYS)))).not.toContain('Pool pod');
  });

  it('prints a skip with its reason and message, and each key state in words', async () => {
    const input = annotated('traffic-proxy,agent-runtime');
    input.spec.containers.push({ name: 'traffic-proxy', image: 'other:1' });
    const text = renderText(await explain(input, storeOf(ALL_KEYS, { ...ALL_KEYS, 'agent-runtime': '[' })));
    expect(text).toMatch(/^ {2}traffic-proxy: skipped, container-name-conflict: .+$/m);
    expect(text).toMatch(/^ {2}key agent-runtime: on its last valid version; the current value is bad: .+$/m);
  });
});
