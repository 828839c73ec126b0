import type { InjectionReport, SkipReason } from './report.js';
import type { Pod } from './types.js';

/** Records what the webhook did to a pod, for people and for the next admission of the same pod. */
export const STATUS_ANNOTATION = 'agents.kruise.io/runtime-injection-status';

export interface InjectionStatus {
  injected: string[];
  skipped: { runtime: string; reason: SkipReason; message: string }[];
  wrapped: string[];
}

/** Runtimes an earlier admission recorded as injected. A status we cannot read records nothing. */
export function previouslyInjected(pod: Pod): Set<string> {
  const raw = pod.metadata?.annotations?.[STATUS_ANNOTATION];
  if (typeof raw !== 'string') return new Set();
  try {
    const parsed: unknown = JSON.parse(raw);
    if (parsed === null || typeof parsed !== 'object' || !('injected' in parsed)) return new Set();
    const injected = parsed.injected;
    return new Set(Array.isArray(injected) ? injected.filter((n): n is string => typeof n === 'string') : []);
  } catch {
    return new Set();
  }
}

/** The annotation value after this admission: earlier injections stay recorded, skips are this admission's. */
export function statusAfter(before: ReadonlySet<string>, report: InjectionReport): string {
  const injected = [...new Set([...before, ...report.injected])];
  const skipped = report.skipped
    .filter((s) => s.reason !== 'already-injected')
    .map(({ runtime, reason, message }) => ({ runtime, reason, message }));
  const status: InjectionStatus = { injected, skipped, wrapped: report.wrapped };
  return JSON.stringify(status);
}
