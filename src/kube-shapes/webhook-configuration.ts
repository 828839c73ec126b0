/** The parts of a MutatingWebhookConfiguration that `explain` reads (src/cli/explain/webhook-match.ts). */

/** One term of a metav1.LabelSelector's matchExpressions. */
export interface LabelSelectorRequirement {
  key: string;
  operator: string;
  values?: string[];
}

/** A metav1.LabelSelector, as a webhook's objectSelector and namespaceSelector (src/cli/explain/label-selector.ts applies it). */
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

/** The fields of a MutatingWebhookConfiguration's webhook that decide whether kube-apiserver calls it. */
export interface WebhookEntry {
  name: string;
  rules?: WebhookRule[];
  objectSelector?: LabelSelector | null;
  namespaceSelector?: LabelSelector | null;
  matchConditions?: { name: string; expression?: string }[];
}

export interface WebhookRule {
  apiGroups?: string[];
  apiVersions?: string[];
  operations?: string[];
  resources?: string[];
  scope?: string;
}
