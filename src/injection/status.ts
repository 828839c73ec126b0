import { proxiedLabel, type InjectionReport, type RuntimeSkip } from './report.js';
import { STATUS_ANNOTATION } from '../shapes/sandbox-api.js';
import type { Pod } from './types.js';

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

/**
 * The annotation value after this admission. What earlier admissions decided and wrapped stays recorded, so a
 * reinvocation computes the very same value (and so no patch). The revision is the first admission's, whose
 * runtimes the pod holds; `revisionOf` is asked only for a pod with no record yet.
 */
export function statusAfter(
  before: RecordedStatus,
  report: InjectionReport,
  revisionOf?: (used: readonly string[]) => string | undefined,
): string {
  const revision = hasRecord(before) ? before.revision : revisionOf?.([...report.injected, ...report.present]);
  const status: InjectionStatus = {
    injected: union(before.injected, report.injected),
    present: union(before.present, report.present),
    skipped: [...before.skipped, ...report.skipped].map(({ runtime, reason, message }) => ({
      runtime,
      reason,
      message,
    })),
    wrapped: union(before.wrapped, report.wrapped),
    ...(revision === undefined ? {} : { revision }),
  };
  // Made afresh on every pass while the rewrite applies: a rewritten probe still counts as going through the
  // proxy, so a reinvocation records the same.
  const rewrite = report.probeRewrite;
  if (rewrite !== undefined) {
    status.healthProbeRewrite = { proxy: rewrite.proxy, probes: rewrite.probes.map(proxiedLabel) };
  } else if (before.healthProbeRewrite !== undefined) {
    status.healthProbeRewrite = before.healthProbeRewrite;
  }
  return JSON.stringify(status);
}

function union(first: readonly string[], second: readonly string[]): string[] {
  return [...new Set([...first, ...second])];
}
