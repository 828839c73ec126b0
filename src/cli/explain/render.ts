import { deliverySection } from './delivery-render.js';
import type { KeyReport } from './explanation.js';
import type { Explanation, RuntimeFate, WebhookCheck } from './explanation.js';
import type { SelectorVerdict } from './label-selector.js';
import type { WebhookVerdict } from './webhook-match.js';

/** The explanation for a person: one section per question, the patch last as a unified diff. */
export function renderText(explanation: Explanation): string {
  const lines: string[] = [`Pod ${explanation.pod} (${explanation.origin})`];
  for (const note of explanation.notes) lines.push(`  note: ${note}`);
  lines.push(
    '',
    ...webhookSection(explanation.webhook),
    '',
    ...selectionSection(explanation),
    '',
    ...configSection(explanation),
  );
  lines.push('', ...resultSection(explanation));
  const revision = revisionLine(explanation);
  if (revision !== undefined) lines.push('', revision);
  const { poolPod } = explanation;
  if (poolPod !== undefined) {
    const pool = poolPod.pool === undefined ? 'in no pool' : `pool ${poolPod.pool}`;
    lines.push('', `Pool pod (as deliver-env judges it, ${pool}): ${poolPod.state}: ${poolPod.reason}`);
  }
  if (explanation.warnings.length > 0)
    lines.push('', 'Warnings the webhook answers with', ...explanation.warnings.map((w) => `  ${w}`));
  if (explanation.advice.length > 0)
    lines.push(
      '',
      'What Auto cannot hold until the claim (answered as warnings with serve --warn-unwrapped)',
      ...explanation.advice.map((a) => `  ${a}`),
    );
  lines.push('', ...patchSection(explanation));
  if (explanation.delivery !== undefined) lines.push('', ...deliverySection(explanation.delivery));
  return `${lines.join('\n')}\n`;
}

function webhookSection(check: WebhookCheck): string[] {
  switch (check.state) {
    case 'offline':
      return [
        'Webhook selection: not checked offline (no --kubeconfig: the webhook configuration and the namespace labels are unknown)',
      ];
    case 'not-installed':
      return [
        `Webhook selection: MutatingWebhookConfiguration ${check.configuration} is not installed: no pod is sent to the webhook`,
      ];
    case 'checked': {
      const verdict = check.selected ? 'selected' : 'NOT selected: kube-apiserver never calls the webhook for this pod';
      const lines = [`Webhook selection (MutatingWebhookConfiguration ${check.configuration}): ${verdict}`];
      for (const webhook of check.webhooks) lines.push(...webhookLines(webhook));
      for (const note of check.notes) lines.push(`  note: ${note}`);
      return lines;
    }
  }
}

function webhookLines(webhook: WebhookVerdict): string[] {
  const lines = [`  webhook ${webhook.webhook}: ${webhook.selected ? 'selects this pod' : 'does not select this pod'}`];
  lines.push(`    rules: ${webhook.rules ? 'cover CREATE of v1 pods' : 'FAIL: no rule covers CREATE of v1 pods'}`);
  lines.push(...selectorLines('objectSelector (pod labels)', webhook.objectSelector));
  lines.push(...selectorLines('namespaceSelector (namespace labels)', webhook.namespaceSelector));
  if (webhook.unevaluatedConditions.length > 0) {
    lines.push(`    matchConditions: not evaluated here (CEL): ${webhook.unevaluatedConditions.join(', ')}`);
  }
  return lines;
}

function selectorLines(name: string, verdict: SelectorVerdict): string[] {
  if (verdict.matches) return [`    ${name}: matches`];
  return [`    ${name}: FAILS`, ...verdict.failed.map(({ term, reason }) => `      ${term}: ${reason}`)];
}

function selectionSection({ selection, denial }: Explanation): string[] {
  if (selection === undefined) {
    return [
      `Runtimes and policy: not chosen, the pod is denied first${denial === undefined ? '' : ` (${denial.code})`}`,
    ];
  }
  const runtimes = selection.runtimes.length === 0 ? '(none)' : selection.runtimes.join(', ');
  return [
    'Runtimes and policy',
    `  runtimes: ${runtimes}  from ${selection.runtimesFrom}`,
    `  policy:   ${selection.policy}  ${selection.policyFrom === undefined ? '(set nowhere: None by default)' : `from ${selection.policyFrom}`}`,
  ];
}

function configSection({ configMap }: Explanation): string[] {
  if (!configMap.exists) return [`Config: ConfigMap ${configMap.name} does not exist: nothing is injected`];
  return [`Config (ConfigMap ${configMap.name})`, ...configMap.keys.map(keyLine)];
}

const KEY_STATES: Record<KeyReport['state'], string> = {
  valid: 'valid',
  'last-valid': 'on its last valid version; the current value is bad',
  invalid: 'invalid, never seen valid',
  missing: 'missing (no key, or an empty one)',
};

function keyLine({ key, state, error }: KeyReport): string {
  return `  key ${key}: ${KEY_STATES[state]}${error === undefined ? '' : `: ${error}`}`;
}

function resultSection(explanation: Explanation): string[] {
  const { webhook, decision, denial } = explanation;
  const heading = webhook.state === 'checked' && !webhook.selected ? 'Result if the webhook were called' : 'Result';
  const outcome = denial === undefined ? decision : `denied, ${denial.code} (${denial.status}): ${denial.message}`;
  const lines = [`${heading}: ${outcome}`, ...explanation.runtimes.map(fateLine)];
  if (explanation.wrapped.length > 0) lines.push(`  wrapped for Auto: ${explanation.wrapped.join(', ')}`);
  const rewrite = explanation.healthProbeRewrite;
  if (rewrite !== undefined) {
    const probes = rewrite.probes.length === 0 ? 'none (no network probe or hook)' : rewrite.probes.join(', ');
    lines.push(`  health probes rewritten through proxy "${rewrite.proxy}": ${probes}`);
  }
  return lines;
}

/** The config revision the pod records, against what the config in force gives for its runtimes. */
function revisionLine({ revision, selection }: Explanation): string | undefined {
  const { recorded, admitted, current } = revision;
  const runtimes = selection?.runtimes.join(', ') ?? '';
  const now = current === undefined ? '' : `; the config in force gives ${current} for ${runtimes}`;
  if (recorded !== undefined) {
    const verdict = current === undefined ? '' : recorded === current ? ': the same' : ': it differs';
    return `Config revision: recorded on the pod ${recorded}${now}${verdict}`;
  }
  if (admitted !== undefined) return `Config revision: this admission records ${admitted}${now}`;
  if (current !== undefined) return `Config revision: none recorded on the pod${now}`;
  return undefined;
}

function fateLine(fate: RuntimeFate): string {
  if (fate.fate === 'none') return `  ${fate.runtime}: nothing, ${fate.why}`;
  const earlier = fate.earlier ? ' (recorded by an earlier admission)' : '';
  if (fate.fate === 'skipped') return `  ${fate.runtime}: skipped, ${fate.reason}: ${fate.message}${earlier}`;
  return `  ${fate.runtime}: ${fate.fate}${earlier}`;
}

function patchSection({ patch, diff, denial }: Explanation): string[] {
  if (denial !== undefined) return ['Patch: none, the pod is denied (see Result)'];
  if (patch.length === 0) return ['Patch: none, the pod is admitted as it is'];
  return [
    `Patch: ${patch.length} JSON patch operation${patch.length === 1 ? '' : 's'}, as a diff of the pod`,
    diff.trimEnd(),
  ];
}
