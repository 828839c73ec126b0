import { createHash } from 'node:crypto';
import {
  INIT_RUNTIME_REQUEST,
  LEGACY_ENVD_URL,
  RUNTIME_ACCESS_TOKEN,
  RUNTIME_URL,
  type DeliverySandbox,
} from './claim.js';

/**
 * What a refusal waits on: the Sandbox's request, token and runtime address, and the pod. A status update of
 * the Sandbox that changes none of them does not retry a refused request.
 */
export function fingerprintOf(sandbox: DeliverySandbox, podUid: string | undefined): string {
  const annotations = sandbox.metadata?.annotations ?? {};
  const parts = [INIT_RUNTIME_REQUEST, RUNTIME_URL, LEGACY_ENVD_URL, RUNTIME_ACCESS_TOKEN].map(
    (name) => annotations[name] ?? null,
  );
  const ip = sandbox.status?.podInfo?.podIP;
  return createHash('sha256')
    .update(JSON.stringify([...parts, typeof ip === 'string' ? ip : null, podUid ?? null]))
    .digest('hex');
}
