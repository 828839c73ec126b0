import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { DEFAULT_WEBHOOK_CONFIGURATION } from '../../../src/cli/explain.js';
import { evaluateWebhooks, type WebhookEntry, type WebhookRule } from '../../../src/cli/explain/webhook-match.js';

const MANIFEST = new URL('../../../manifests/base/mutatingwebhookconfiguration.yaml', import.meta.url);
const shipped = parse(readFileSync(MANIFEST, 'utf8')) as { metadata: { name: string }; webhooks: WebhookEntry[] };

const SANDBOX_POD = { 'agents.kruise.io/created-by': 'sandbox' };
const nsLabels = (name: string) => ({ 'kubernetes.io/metadata.name': name });

describe('the shipped MutatingWebhookConfiguration', () => {
  it('is the name explain reads by default', () => {
    expect(shipped.metadata.name).toBe(DEFAULT_WEBHOOK_CONFIGURATION);
  });

  it('selects a Sandbox pod in a team namespace', () => {
    const [verdict] = evaluateWebhooks(shipped.webhooks, { pod: SANDBOX_POD, namespace: nsLabels('team-a') });
    expect(verdict).toMatchObject({ webhook: 'sandbox-injector.agents.kruise.io', selected: true, rules: true });
  });

  it('does not select a pod without the created-by label, naming the objectSelector term', () => {
    const [verdict] = evaluateWebhooks(shipped.webhooks, { pod: { app: 'web' }, namespace: nsLabels('team-a') });
    expect(verdict).toMatchObject({
      selected: false,
      objectSelector: {
        matches: false,
        failed: [
          {
            term: 'matchLabels agents.kruise.io/created-by=sandbox',
            reason: 'label agents.kruise.io/created-by is not set',
          },
        ],
      },
      namespaceSelector: { matches: true, failed: [] },
    });
  });

  it.each(['kube-system', 'sandbox-injector-system'])(
    'does not select a Sandbox pod in %s, naming the namespaceSelector term',
    (ns) => {
      const [verdict] = evaluateWebhooks(shipped.webhooks, { pod: SANDBOX_POD, namespace: nsLabels(ns) });
      expect(verdict?.selected).toBe(false);
      expect(verdict?.objectSelector.matches).toBe(true);
      expect(verdict?.namespaceSelector.failed.map((f) => f.term)).toEqual([
        'matchExpressions[0] kubernetes.io/metadata.name NotIn (sandbox-injector-system, kube-system)',
      ]);
    },
  );
});

describe('rules', () => {
  const podCreate: WebhookRule = {
    apiGroups: [''],
    apiVersions: ['v1'],
    operations: ['CREATE'],
    resources: ['pods'],
    scope: 'Namespaced',
  };
  const selected = (rules: WebhookRule[] | undefined): boolean =>
    evaluateWebhooks([{ name: 'w', rules }], { pod: {}, namespace: {} })[0]?.selected ?? false;

  it.each<[string, Partial<WebhookRule>, boolean]>([
    ['CREATE of v1 pods', {}, true],
    [
      'wildcards everywhere',
      { apiGroups: ['*'], apiVersions: ['*'], operations: ['*'], resources: ['*'], scope: '*' },
      true,
    ],
    ['*/* resources', { resources: ['*/*'] }, true],
    ['an unset scope', { scope: undefined }, true],
    ['UPDATE only', { operations: ['UPDATE'] }, false],
    ['another group', { apiGroups: ['apps'] }, false],
    ['another version', { apiVersions: ['v2'] }, false],
    ['pod subresources only', { resources: ['pods/*'] }, false],
    ['Cluster scope', { scope: 'Cluster' }, false],
  ])('%s', (_name, change, expected) => {
    expect(selected([{ ...podCreate, ...change }])).toBe(expected);
  });

  it('selects nothing without rules, and reports CEL conditions it cannot evaluate', () => {
    expect(selected(undefined)).toBe(false);
    const [verdict] = evaluateWebhooks(
      [{ name: 'w', rules: [podCreate], matchConditions: [{ name: 'not-dry-run', expression: 'true' }] }],
      {
        pod: {},
        namespace: {},
      },
    );
    expect(verdict).toMatchObject({ selected: true, unevaluatedConditions: ['not-dry-run'] });
  });
});
