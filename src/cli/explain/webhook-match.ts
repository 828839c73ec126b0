import type { WebhookEntry, WebhookRule } from '../../kube-shapes/webhook-configuration.js';
import { evaluateSelector, type SelectorVerdict } from './label-selector.js';

export type { WebhookEntry, WebhookRule };

export interface WebhookVerdict {
  webhook: string;
  /** Whether kube-apiserver sends this pod's creation to the webhook. */
  selected: boolean;
  /** Whether a rule covers CREATE of core/v1 pods. */
  rules: boolean;
  objectSelector: SelectorVerdict;
  namespaceSelector: SelectorVerdict;
  /** CEL conditions are not evaluated here: their names, so the reader knows they also decide. */
  unevaluatedConditions: string[];
}

export interface PodLabels {
  pod: Readonly<Record<string, string>>;
  namespace: Readonly<Record<string, string>>;
}

/** Judges each webhook of the configuration for the creation of a pod with these labels. */
export function evaluateWebhooks(webhooks: readonly WebhookEntry[], labels: PodLabels): WebhookVerdict[] {
  return webhooks.map((webhook) => {
    const rules = (webhook.rules ?? []).some(coversPodCreate);
    const objectSelector = evaluateSelector(webhook.objectSelector, labels.pod);
    const namespaceSelector = evaluateSelector(webhook.namespaceSelector, labels.namespace);
    return {
      webhook: webhook.name,
      selected: rules && objectSelector.matches && namespaceSelector.matches,
      rules,
      objectSelector,
      namespaceSelector,
      unevaluatedConditions: (webhook.matchConditions ?? []).map((condition) => condition.name),
    };
  });
}

/** `*` stands for any value in every list; `*` and `*\/*` cover pods as a resource, `pods/*` only its subresources. */
function coversPodCreate(rule: WebhookRule): boolean {
  const has = (list: string[] | undefined, ...wanted: string[]): boolean =>
    (list ?? []).some((item) => item === '*' || wanted.includes(item));
  return (
    has(rule.operations, 'CREATE') &&
    has(rule.apiGroups, '') &&
    has(rule.apiVersions, 'v1') &&
    has(rule.resources, 'pods', '*/*') &&
    (rule.scope === undefined || rule.scope === '*' || rule.scope === 'Namespaced')
  );
}
