import type { RuntimeSkip, SkipReason } from '../sandbox/injection-status.js';

export type { RuntimeSkip, SkipReason };

export interface InjectionReport {
  /** Runtimes injected by this admission, in the order applied. */
  injected: string[];
  /** Runtimes this admission found already in the pod (the Sandbox controller injects them itself). */
  present: string[];
  skipped: RuntimeSkip[];
  /** Containers whose command was wrapped for EnvVarsInjectionPolicy Auto by this admission. */
  wrapped: string[];
  /** One line each, for the admission response and the CLI's stderr. */
  warnings: string[];
  /**
   * What Auto cannot hold until the claim (network probes of wrapped containers, containers with no command):
   * one line each, like the warnings, but answered as warnings only when asked for (`--warn-unwrapped`), since
   * the spec's own cases expect none for such pods. Never a skip: no patch or status changes with them.
   */
  advice: string[];
  /** What traffic-proxy's health-probe rewrite sent through the proxy, when it applied (traffic-proxy-probes.ts). */
  probeRewrite?: ProbeRewrite;
}

/** A probe (`readinessProbe`, `livenessProbe`, `startupProbe`) or lifecycle handler (`preStop`, `postStart`). */
export interface ProxiedProbe {
  container: string;
  probe: 'readinessProbe' | 'livenessProbe' | 'startupProbe' | 'preStop' | 'postStart';
}

/** The proxy the probes go through, and every network probe and handler of the other containers. */
export interface ProbeRewrite {
  proxy: string;
  probes: ProxiedProbe[];
}

/** How the status annotation and `explain` name a probe or handler that goes through the proxy. */
export function proxiedLabel({ container, probe }: ProxiedProbe): string {
  return `${container}/${probe}`;
}

export function emptyReport(): InjectionReport {
  return { injected: [], present: [], skipped: [], wrapped: [], warnings: [], advice: [] };
}

export function skip(report: InjectionReport, runtime: string, reason: SkipReason, message: string): void {
  report.skipped.push({ runtime, reason, message });
  report.warnings.push(`${runtime}: skipped, ${message}`);
}
