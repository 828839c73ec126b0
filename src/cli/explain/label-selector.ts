/**
 * Kubernetes label selectors (metav1.LabelSelector) as kube-apiserver applies a webhook's objectSelector and
 * namespaceSelector: every term must hold; matchLabels `k: v` is `k In (v)`; In needs the label set to one of
 * the values, NotIn holds when the label is unset or set to none of them, Exists and DoesNotExist look only at
 * the key. An unset selector selects everything (the API server defaults it to `{}`).
 */
import type { LabelSelector, LabelSelectorRequirement } from '../../kube-shapes/webhook-configuration.js';

export type { LabelSelector, LabelSelectorRequirement };

/** One term that does not hold: the term as written and why it fails on these labels. */
export interface FailedTerm {
  term: string;
  reason: string;
}

export interface SelectorVerdict {
  matches: boolean;
  /** Every term that fails, in the order written; empty when the selector matches. */
  failed: FailedTerm[];
}

type Labels = Readonly<Record<string, string>>;

export function evaluateSelector(selector: LabelSelector | null | undefined, labels: Labels): SelectorVerdict {
  const failed: FailedTerm[] = [];
  for (const [key, value] of Object.entries(selector?.matchLabels ?? {})) {
    const reason = inFails(key, [value], labels);
    if (reason !== undefined) failed.push({ term: `matchLabels ${key}=${value}`, reason });
  }
  for (const [index, requirement] of (selector?.matchExpressions ?? []).entries()) {
    const reason = requirementFails(requirement, labels);
    if (reason !== undefined)
      failed.push({ term: `matchExpressions[${index}] ${describeRequirement(requirement)}`, reason });
  }
  return { matches: failed.length === 0, failed };
}

/** `key In (a, b)`, `key Exists`, as kubectl and the API docs write them. */
export function describeRequirement({ key, operator, values }: LabelSelectorRequirement): string {
  return values === undefined || values.length === 0
    ? `${key} ${operator}`
    : `${key} ${operator} (${values.join(', ')})`;
}

/** Why the requirement fails on `labels`, or undefined when it holds. */
function requirementFails(
  { key, operator, values = [] }: LabelSelectorRequirement,
  labels: Labels,
): string | undefined {
  const takesValues = operator === 'In' || operator === 'NotIn';
  if (takesValues && values.length === 0)
    return `invalid: ${operator} needs at least one value (kube-apiserver refuses this selector)`;
  if ((operator === 'Exists' || operator === 'DoesNotExist') && values.length > 0) {
    return `invalid: ${operator} takes no values (kube-apiserver refuses this selector)`;
  }
  const value = Object.hasOwn(labels, key) ? labels[key] : undefined;
  switch (operator) {
    case 'In':
      return inFails(key, values, labels);
    case 'NotIn':
      return value !== undefined && values.includes(value)
        ? `label ${key} is "${value}", one of the excluded values`
        : undefined;
    case 'Exists':
      return value === undefined ? `label ${key} is not set` : undefined;
    case 'DoesNotExist':
      return value === undefined ? undefined : `label ${key} is set (to "${value}")`;
    default:
      return `invalid: unknown operator "${operator}" (kube-apiserver refuses this selector)`;
  }
}

function inFails(key: string, values: readonly string[], labels: Labels): string | undefined {
  const value = Object.hasOwn(labels, key) ? labels[key] : undefined;
  if (value === undefined) return `label ${key} is not set`;
  if (values.includes(value)) return undefined;
  return values.length === 1
    ? `label ${key} is "${value}", not "${values[0] ?? ''}"`
    : `label ${key} is "${value}", none of the listed values`;
}
