/**
 * What the probe paths answer. The webhook port (Fastify) and the plain-HTTP metrics port both serve `/healthz`
 * and `/readyz`, and a kubelet probe, a curl or a load balancer must get the same answer from either.
 */
export interface HealthAnswer {
  readonly code: 200 | 503;
  readonly body: { readonly status: 'ok' | 'ready' | 'not ready' };
}

/** `/healthz`: the process runs and answers, whatever its readiness. */
export const ALIVE: HealthAnswer = { code: 200, body: { status: 'ok' } };

const READY: HealthAnswer = { code: 200, body: { status: 'ready' } };
const NOT_READY: HealthAnswer = { code: 503, body: { status: 'not ready' } };

/** `/readyz`: 200 once the process can do its work, 503 before that and while it drains. */
export function readiness(ready: boolean): HealthAnswer {
  return ready ? READY : NOT_READY;
}
