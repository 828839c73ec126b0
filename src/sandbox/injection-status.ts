/**
 * The status annotation (STATUS_ANNOTATION) as every reader reads it: the webhook, to
 * keep a reinvocation's answer the same; deliver-env, for the wrapped containers and a pool pod's revision; and
 * `explain`. The webhook writes it (src/injection/status.ts); this is its shape and the one way to read it.
 */
import type { Pod } from '../kube-shapes/kubernetes.js';
import { STATUS_ANNOTATION } from './api.js';

/** Why a runtime (or part of one) was left out. The codes are stable: metrics and the status annotation use them. */
export type SkipReason =
  'container-name-conflict' | 'poststart-conflict' | 'volume-name-conflict' | 'no-main-container';

export interface RuntimeSkip {
  runtime: string;
  reason: SkipReason;
  message: string;
}

export interface InjectionStatus {
  injected: string[];
  present: string[];
  skipped: RuntimeSkip[];
  wrapped: string[];
  /** The injection config's revision the pod was made from: the keys of the runtimes injected or found present. */
  revision?: string;
  /** Only on a pod whose probes traffic-proxy's rewrite sent through the proxy. */
  healthProbeRewrite?: ProbeRewriteRecord;
}

/** The proxy, and each probe or handler that goes through it as `container/probe` (e.g. `app/readinessProbe`). */
export interface ProbeRewriteRecord {
  proxy: string;
  probes: string[];
}

/** What an earlier admission recorded. A status we cannot read records nothing. */
export interface RecordedStatus {
  injected: readonly string[];
  present: readonly string[];
  skipped: readonly RuntimeSkip[];
  wrapped: readonly string[];
  /** Absent on a pod admitted before revisions were recorded. */
  revision?: string;
  healthProbeRewrite?: ProbeRewriteRecord;
}

export function recordedStatus(pod: Pod): RecordedStatus {
  const raw = pod.metadata?.annotations?.[STATUS_ANNOTATION];
  let parsed: unknown;
  try {
    parsed = typeof raw === 'string' ? JSON.parse(raw) : undefined;
  } catch {
    parsed = undefined;
  }
  const status = parsed !== null && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : {};
  return {
    injected: names(status.injected),
    present: names(status.present),
    skipped: skips(status.skipped),
    wrapped: names(status.wrapped),
    ...(typeof status.revision === 'string' ? { revision: status.revision } : {}),
    ...probeRewrite(status.healthProbeRewrite),
  };
}

/** Whether an earlier admission recorded anything: every asked runtime is injected, present or skipped. */
export function hasRecord(status: RecordedStatus): boolean {
  return status.injected.length + status.present.length + status.skipped.length + status.wrapped.length > 0;
}

/** Runtimes an earlier admission decided on: a reinvocation leaves them as they were. */
export function settledRuntimes(status: RecordedStatus): Set<string> {
  return new Set([...status.injected, ...status.present, ...status.skipped.map((s) => s.runtime)]);
}

function skips(value: unknown): RuntimeSkip[] {
  if (!Array.isArray(value)) return [];
  return value.filter(
    (s: unknown): s is RuntimeSkip =>
      s !== null &&
      typeof s === 'object' &&
      typeof (s as RuntimeSkip).runtime === 'string' &&
      typeof (s as RuntimeSkip).reason === 'string' &&
      typeof (s as RuntimeSkip).message === 'string',
  );
}

function probeRewrite(value: unknown): { healthProbeRewrite?: ProbeRewriteRecord } {
  if (value === null || typeof value !== 'object') return {};
  const { proxy, probes } = value as Record<string, unknown>;
  return typeof proxy === 'string' ? { healthProbeRewrite: { proxy, probes: names(probes) } } : {};
}

function names(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((n): n is string => typeof n === 'string') : [];
}
