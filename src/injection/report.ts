/** Why a runtime (or part of one) was left out. The codes are stable: metrics and the status annotation use them. */
export type SkipReason =
  | 'already-injected'
  | 'container-name-conflict'
  | 'poststart-conflict'
  | 'volume-name-conflict'
  | 'no-main-container';

export interface RuntimeSkip {
  runtime: string;
  reason: SkipReason;
  message: string;
}

export interface InjectionReport {
  /** Runtimes injected by this admission, in the order applied. */
  injected: string[];
  skipped: RuntimeSkip[];
  /** Containers whose command was wrapped for EnvVarsInjectionPolicy Auto. */
  wrapped: string[];
  /** One line each, for the admission response and the CLI's stderr. */
  warnings: string[];
}

export function emptyReport(): InjectionReport {
  return { injected: [], skipped: [], wrapped: [], warnings: [] };
}

export function skip(report: InjectionReport, runtime: string, reason: SkipReason, message: string): void {
  report.skipped.push({ runtime, reason, message });
  if (reason !== 'already-injected') {
    report.warnings.push(`${runtime}: skipped, ${message}`);
  }
}
