/**
 * The server's request log lines: one per admission, one per HTTP error answer. Never env values or
 * certificates, and every field that came from the request is cut (src/logging/logger.ts).
 */
import type { AdmissionSummary } from '../admission/answers.js';
import { LOG_NAME_MAX, cutList, cutMessage, cutName, cutNames, cutString, type Logger } from '../logging/logger.js';
import type { HttpFailure } from './http-failure.js';

/** Who, what was asked, what was decided. */
export function admissionLogFields(summary: AdmissionSummary, elapsedMs: number): Record<string, unknown> {
  return {
    uid: cutName(summary.uid),
    namespace: cutName(summary.namespace),
    pod: cutName(summary.pod),
    runtimes: cutNames(summary.runtimes),
    decision: summary.decision,
    present: cutNames(summary.present),
    skipped: cutSkipped(summary.skipped),
    patchBytes: summary.patchBytes,
    warnings: summary.warnings,
    ...(summary.warningMessages.length === 0 ? {} : { warningMessages: cutMessages(summary.warningMessages) }),
    durationMs: roundMs(elapsedMs),
    ...(summary.code === undefined ? {} : { code: summary.code }),
    ...(summary.message === undefined ? {} : { message: cutMessage(summary.message) }),
  };
}

/**
 * `request refused`: every HTTP error answer the server gives, with the path asked for; none when the HTTP
 * parser refused the request before it had one (408, 431, malformed HTTP).
 */
export function logRefusal(logger: Logger, path: string | undefined, { status, body }: HttpFailure): void {
  const where = path === undefined ? {} : { path: cutMessage(path) };
  logger.warn({ ...where, status, message: cutMessage(body.message), code: body.code }, 'request refused');
}

function cutMessages(messages: readonly string[]): string[] {
  return cutList<string>(messages, cutMessage, (count) => `...(${count} more)`);
}

function cutSkipped(skipped: AdmissionSummary['skipped']): { runtime: string; reason: string }[] {
  return cutList<{ runtime: string; reason: string }>(
    skipped,
    ({ runtime, reason }) => ({ runtime: cutString(runtime, LOG_NAME_MAX), reason }),
    (count) => ({ runtime: `...(${count} more)`, reason: 'omitted' }),
  );
}

export function roundMs(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}
