/**
 * The bounds every soak run is held to, and the limits they come from: the Deployment's memory limit, the
 * webhook's timeout and the server's connection cap, as this build of serve and the shipped manifests have them.
 */
import type { Deployment } from './manifests.js';
import type { SoakOptions } from './options.js';
import { connectionCap, type HelpFlag } from './server.js';
import { SETTLE_SLACK, type PhaseResult } from './session.js';

export interface Limits {
  rssMiB: number;
  rssSource: string;
  admissionTimeoutMs: number;
  timeoutSource: string;
  cap: number;
  capSource: string;
}

/** With no connection cap to read, this many connections is taken as the most a bounded server should hold. */
const ASSUMED_CAP = 1_024;
/** Descriptors a phase may hold beyond its connections: listeners, watchers, the harness's own load connections. */
const FD_SLACK = 64;

export function limitsOf(deployment: Deployment, help: Map<string, HelpFlag>, options: SoakOptions): Limits {
  const cap = connectionCap(help);
  const fromDeployment = cap === undefined ? undefined : deployment.limits.get(cap.flag);
  return {
    rssMiB: deployment.memoryMiB,
    rssSource: `the Deployment's memory limit, ${deployment.memory}`,
    admissionTimeoutMs: options.admissionTimeoutMs ?? deployment.webhookTimeoutSeconds * 1000,
    timeoutSource:
      options.admissionTimeoutMs === undefined
        ? `the webhook's timeoutSeconds, ${deployment.webhookTimeoutSeconds}`
        : 'SOAK_ADMISSION_TIMEOUT_MS',
    cap: fromDeployment !== undefined ? Number(fromDeployment) : (cap?.value ?? ASSUMED_CAP),
    capSource:
      cap === undefined
        ? `no connection cap flag in serve --help, ${ASSUMED_CAP} assumed`
        : fromDeployment !== undefined
          ? `the Deployment's --${cap.flag}`
          : `--${cap.flag}'s default`,
  };
}

export interface Bound {
  name: string;
  broken: string[];
}

export function bounds(results: readonly PhaseResult[], limits: Limits): Bound[] {
  const per = (test: (r: PhaseResult) => string | undefined): string[] =>
    results.map((r) => test(r)).filter((line): line is string => line !== undefined);
  return [
    { name: 'no 5xx answer', broken: per((r) => (r.fives > 0 ? `${r.name}: ${r.fives} 5xx` : undefined)) },
    {
      name: 'no crash',
      broken: per((r) => (r.crashes.length > 0 ? `${r.name}: ${r.crashes.length} crashes` : undefined)),
    },
    {
      name: 'no lost normal admission',
      broken: per((r) =>
        r.normalLost > 0 ? `${r.name}: ${r.normalLost} normal admissions lost or failed` : undefined,
      ),
    },
    {
      name: `RSS below ${limits.rssMiB} MiB`,
      broken: per((r) => (r.hwmMiB >= limits.rssMiB ? `${r.name}: peak RSS ${r.hwmMiB.toFixed(0)} MiB` : undefined)),
    },
    {
      name: `open fds at most at-rest + ${limits.cap} + ${FD_SLACK}`,
      broken: per((r) => {
        const peak = Math.max(0, ...r.samples.map((s) => s.fds));
        return peak > r.baselineFds + limits.cap + FD_SLACK
          ? `${r.name}: ${peak} fds (at rest ${r.baselineFds})`
          : undefined;
      }),
    },
    {
      name: `open fds back to at-rest + ${SETTLE_SLACK} once a phase's clients are gone`,
      broken: per((r) =>
        r.settledFds !== undefined && r.settledFds > r.baselineFds + SETTLE_SLACK
          ? `${r.name}: ${r.settledFds} fds after (${r.baselineFds} before)`
          : undefined,
      ),
    },
    {
      name: 'phase checks (answers, patches, leaks, rotations, config versions, drain exit)',
      broken: results.flatMap((r) => r.broken),
    },
    {
      name: 'every phase ran its full count within its time limit',
      broken: per((r) => (r.completed ? undefined : `${r.name}: stopped at its time limit or when the server died`)),
    },
  ];
}
