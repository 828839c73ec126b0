import type { RuntimeSelection } from '../admission/ports.js';
import { DENIALS, type Failure } from '../errors/index.js';
import { ENV_VARS_INJECTION_POLICIES, type EnvVarsInjectionPolicy, type Pod } from '../injection/index.js';
import { POLICY_ANNOTATION, RUNTIMES_ANNOTATION } from '../shapes/sandbox-api.js';

/** "a, b,,a" -> ["a", "b"]: spaces, empty entries and duplicates are ignored. */
export function parseRuntimeList(value: string): string[] {
  const names = value
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  return [...new Set(names)];
}

/** `None` when unset or empty; any other value than the allowed ones is refused, naming `field`. */
export function parsePolicy(value: unknown, field: string): PolicyResult {
  if (value === undefined || value === null || value === '') return { ok: true, policy: 'None' };
  const allowed: readonly unknown[] = ENV_VARS_INJECTION_POLICIES;
  if (allowed.includes(value)) return { ok: true, policy: value as EnvVarsInjectionPolicy };
  return { ok: false, denial: DENIALS.policyInvalid(field, value, ENV_VARS_INJECTION_POLICIES) };
}

type PolicyResult = { ok: true; policy: EnvVarsInjectionPolicy } | { ok: false; denial: Failure };

/** A policy with the field it was read from, absent when no source set one. */
type ChosenPolicy = { ok: true; policy: EnvVarsInjectionPolicy; field?: string } | { ok: false; denial: Failure };

/** A value for the policy and the field it was read from, for the message if it is bad. */
export type PolicySource = readonly [value: unknown, field: string];

/**
 * The first policy that is set among `sources`, in order. Every value that is set is checked, not only the one
 * that wins: a bad value is bad input wherever it is.
 */
export function firstPolicy(sources: readonly PolicySource[]): ChosenPolicy {
  let chosen: { policy: EnvVarsInjectionPolicy; field: string } | undefined;
  for (const [value, field] of sources) {
    if (value === undefined || value === null || value === '') continue;
    const parsed = parsePolicy(value, field);
    if (!parsed.ok) return parsed;
    chosen ??= { policy: parsed.policy, field };
  }
  return chosen === undefined ? { ok: true, policy: 'None' } : { ok: true, ...chosen };
}

/** Runtimes and policy as the pod names them itself: offline use, and cluster mode when the operator allows it. */
export function runtimesFromAnnotations(pod: Pod): RuntimeSelection {
  const annotations = pod.metadata?.annotations ?? {};
  const policy = firstPolicy([[annotations[POLICY_ANNOTATION], `annotation ${POLICY_ANNOTATION}`]]);
  if (!policy.ok) return policy;
  const runtimes = parseRuntimeList(annotations[RUNTIMES_ANNOTATION] ?? '');
  return {
    ok: true,
    runtimes,
    policy: policy.policy,
    source: `annotation ${RUNTIMES_ANNOTATION}`,
    policySource: policy.field,
  };
}
