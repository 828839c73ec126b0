/** Denials: an AdmissionReview answered `allowed: false`, with this status in `response.status.code`. */
import { define } from './failure.js';

export const DENIALS = {
  podMalformed: define(
    'SI_POD_MALFORMED',
    400,
    'denial',
    'a field of the pod that the injection reads has the wrong type',
    (detail: string) => `pod is malformed: ${detail}`,
  ),
  podTooLarge: define(
    'SI_POD_TOO_LARGE',
    400,
    'denial',
    'the pod is past a limit kube-apiserver enforces (annotations over 256 KiB), so it could never be created',
    (what: string) => `pod is too large: ${what}`,
  ),
  policyInvalid: define(
    'SI_POLICY_INVALID',
    400,
    'denial',
    'an EnvVarsInjectionPolicy value other than None or Auto, wherever it was set',
    (field: string, value: unknown, allowed: readonly string[]) =>
      `${field}: ${JSON.stringify(value)} is not a valid EnvVarsInjectionPolicy (allowed: ${allowed.join(', ')})`,
  ),
  sandboxSpecInvalid: define(
    'SI_SANDBOX_SPEC_INVALID',
    400,
    'denial',
    "the owning Sandbox's spec.runtimes is not a list of named runtimes",
    (sandbox: string, detail: string) => `${sandbox}: ${detail}`,
  ),
  creatorUntrusted: define(
    'SI_CREATOR_UNTRUSTED',
    403,
    'denial',
    'a pod claims a Sandbox owner but its creator is not in --trusted-creators',
    (creator: string, sandbox: string) =>
      `${creator} may not create a pod owned by ${sandbox}: only the webhook's trusted creators may (--trusted-creators)`,
  ),
  sandboxNotFound: define(
    'SI_SANDBOX_NOT_FOUND',
    404,
    'denial',
    "the pod's controller owner names a Sandbox that does not exist (or has another uid)",
    (sandbox: string, uid: string) => `owner ${sandbox} (uid ${uid}) not found`,
  ),
  sandboxLookupFailed: define(
    'SI_SANDBOX_LOOKUP_FAILED',
    500,
    'denial',
    'the owning Sandbox could not be read from the API server',
    (sandbox: string, reason: string) => `cannot look up owner ${sandbox}: ${reason}`,
  ),
  runtimeConfigUnusable: define(
    'SI_RUNTIME_CONFIG_UNUSABLE',
    500,
    'denial',
    'an asked runtime has no (or an empty) key in the injection ConfigMap, or a bad key never seen valid',
    (problems: readonly string[]) => problems.join('; '),
  ),
} as const;
