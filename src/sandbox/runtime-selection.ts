/**
 * Which runtimes and which policy a pod asks for: from its owning Sandbox (the Sandbox controller's pods) or,
 * where the operator allows it, from the pod's own annotations.
 */
import { DENIALS, type Failure } from '../errors/index.js';
import type { Pod } from '../kube-shapes/kubernetes.js';
import {
  ENV_VARS_INJECTION_POLICIES,
  POLICY_ANNOTATION,
  RUNTIMES_ANNOTATION,
  type EnvVarsInjectionPolicy,
  type Sandbox,
} from './api.js';

/**
 * The runtimes and policy a pod asks for, as plain data: what the admission handler is given, and what
 * deliver-env and `explain` judge a pool pod by. The admission never learns whether they came from a Sandbox in
 * an informer's cache or from a pod's annotation.
 */
export type RuntimeSelection =
  | {
      ok: true;
      runtimes: string[];
      policy: EnvVarsInjectionPolicy;
      /** Where the runtimes were read, e.g. `Sandbox ns/name: spec.runtimes`; `explain` shows it. */
      source: string;
      /** The field the policy was read from; absent when none was set and the policy is None by default. */
      policySource?: string;
    }
  | { ok: false; denial: Failure };

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

/**
 * Runtimes come only from the Sandbox's spec. The policy is the first set of: the Sandbox's
 * spec.envVarsInjectionPolicy (proposed; today's CRD prunes it), the Sandbox's annotation, and the pod's own
 * annotation, which the Sandbox controller copies from the template. Reading it from the pod is safe because
 * wrapping grants nothing: it only makes the pod's own commands wait for their environment.
 */
export function selectionFromSandbox(sandbox: Sandbox, pod: Pod, label: string): RuntimeSelection {
  const runtimes = sandbox.spec?.runtimes ?? [];
  if (!Array.isArray(runtimes))
    return { ok: false, denial: DENIALS.sandboxSpecInvalid(label, 'spec.runtimes must be a list') };
  const names: string[] = [];
  for (const [index, runtime] of runtimes.entries()) {
    const name: unknown = (runtime as { name?: unknown } | null)?.name;
    if (typeof name !== 'string' || name === '') {
      const detail = `spec.runtimes[${index}].name must be a non-empty string`;
      return { ok: false, denial: DENIALS.sandboxSpecInvalid(label, detail) };
    }
    if (!names.includes(name)) names.push(name);
  }
  const policy = firstPolicy([
    [sandbox.spec?.envVarsInjectionPolicy, `${label}: spec.envVarsInjectionPolicy`],
    [sandbox.metadata?.annotations?.[POLICY_ANNOTATION], `${label}: annotation ${POLICY_ANNOTATION}`],
    [pod.metadata.annotations?.[POLICY_ANNOTATION], `pod annotation ${POLICY_ANNOTATION}`],
  ]);
  if (!policy.ok) return policy;
  return {
    ok: true,
    runtimes: names,
    policy: policy.policy,
    source: `${label}: spec.runtimes`,
    policySource: policy.field,
  };
}
