/** The status annotation an admission writes; its shape and its reading are the Sandbox domain's. */
import { proxiedLabel, type InjectionReport } from './report.js';
import { hasRecord, type InjectionStatus, type RecordedStatus } from '../sandbox/injection-status.js';

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
