/**
 * The Prometheus instruments, on a registry owned by one server instance (tests build many apps in one
 * process; the prom-client global registry would collide). Callers record facts through the named methods
 * below and never touch label strings, so the label sets stay small and fixed.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { AdmissionSummary } from '../admission/answers.js';
import { DENIALS } from '../errors/index.js';

export type AdmissionOutcome = 'injected' | 'unchanged' | 'denied' | 'error' | 'bad_request';
const OUTCOMES: readonly AdmissionOutcome[] = ['injected', 'unchanged', 'denied', 'error', 'bad_request'];
export type ReloadResult = 'success' | 'failure';
const RELOAD_RESULTS: readonly ReloadResult[] = ['success', 'failure'];
/**
 * Why the transport refused or dropped a client before (or instead of) an admission answer: over the
 * in-flight byte budget (503), over the connection cap (dropped at accept), closed to make room for another
 * (evicted: arriving past the slow-client grace, or idle longest, at the cap or the budget), a request not received in time
 * (408), answers left unread, and requests the HTTP parser could not read (400, 413, 431).
 */
export type RefusalReason =
  'busy' | 'connection_limit' | 'evicted' | 'request_timeout' | 'unread_response' | 'bad_http';
const REFUSAL_REASONS: readonly RefusalReason[] = [
  'busy',
  'connection_limit',
  'evicted',
  'request_timeout',
  'unread_response',
  'bad_http',
];

/** A config key rejected at a load; `fellBack` when its last valid version is used instead (InvalidKey fits). */
export interface RejectedKey {
  readonly key: string;
  readonly fellBack: boolean;
}

export interface MetricsOptions {
  /** process_* and nodejs_* metrics; off in tests, where they would add timers per app. */
  defaultMetrics: boolean;
  /** ms epoch of the last successful config load, undefined before the first. */
  configLoadedAt(): number | undefined;
  now(): number;
}

export interface ServerMetrics {
  readonly registry: Registry;
  admission(summary: AdmissionSummary, seconds: number): void;
  admissionFailed(outcome: 'error' | 'bad_request', seconds: number): void;
  /** `invalidKeys` is the whole list of the load; undefined when nothing was loaded (the last state stands). */
  configReload(result: ReloadResult, invalidKeys: readonly RejectedKey[] | undefined): void;
  tlsReload(result: ReloadResult): void;
  tlsCertificate(notAfter: Date): void;
  refused(reason: RefusalReason): void;
  /** Bytes of request bodies and unsent answers held now, against --max-inflight-bytes. */
  inflightBytes(bytes: number): void;
  openConnections(count: number): void;
}

const PREFIX = 'sandbox_injector_';

export function createMetrics(options: MetricsOptions): ServerMetrics {
  const registry = new Registry();
  if (options.defaultMetrics) collectDefaultMetrics({ register: registry });

  const counter = <L extends string = never>(name: string, help: string, labelNames: readonly L[] = []): Counter<L> =>
    new Counter<L>({ name: PREFIX + name, help, labelNames, registers: [registry] });
  const gauge = <L extends string = never>(name: string, help: string, labelNames: readonly L[] = []): Gauge<L> =>
    new Gauge<L>({ name: PREFIX + name, help, labelNames, registers: [registry] });

  const admissions = counter(
    'admissions_total',
    'Admission reviews answered, by outcome (injected, unchanged, denied, error, bad_request)',
    ['outcome'],
  );
  const skips = counter('runtime_skips_total', 'Runtimes skipped inside admitted pods, by runtime and reason code', [
    'runtime',
    'reason',
  ]);
  const duration = new Histogram({
    name: `${PREFIX}admission_duration_seconds`,
    help: 'Time from request received to response ready, by outcome',
    labelNames: ['outcome'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  const configReloads = counter(
    'config_reloads_total',
    'Injection config loads from the file or the ConfigMap watch, by result (failure: the last valid config stays in use)',
    ['result'],
  );
  const invalidKeys = gauge(
    'config_invalid_keys',
    'ConfigMap keys rejected at the last load (each falls back to its last valid version, if any)',
  );
  // One series per key on its last valid version, so an alert can say which key and for how long; a key that
  // recovers or leaves the ConfigMap loses its series at the next load rather than reading 0 forever.
  const keyFallback = gauge(
    'config_key_fallback',
    'ConfigMap keys rejected at the last load whose last valid version is in use instead: 1 per such key, no series otherwise',
    ['key'],
  );
  new Gauge({
    name: `${PREFIX}config_age_seconds`,
    help: 'Seconds since the injection config was last loaded successfully (NaN before the first load)',
    registers: [registry],
    collect() {
      const loadedAt = options.configLoadedAt();
      this.set(loadedAt === undefined ? Number.NaN : (options.now() - loadedAt) / 1000);
    },
  });
  const tlsReloads = counter(
    'tls_reloads_total',
    'Serving certificate reloads, by result (failure: the previous pair stays in use)',
    ['result'],
  );
  const certNotAfter = gauge(
    'tls_certificate_not_after_seconds',
    'Expiry of the serving certificate in use, as a Unix timestamp',
  );

  const denials = counter(
    'denials_total',
    'Admission reviews answered allowed: false, by denial code (src/errors/, docs/errors.md)',
    ['code'],
  );
  const refusals = counter(
    'transport_refusals_total',
    'Clients refused or dropped by the transport limits, by reason (busy, connection_limit, evicted, request_timeout, unread_response, bad_http)',
    ['reason'],
  );
  const inflight = gauge(
    'inflight_bytes',
    'Bytes of request bodies being received and of answers not yet written out, held in memory now',
  );
  const connections = gauge('open_connections', 'Open connections on the webhook port (TLS established)');

  // Zero-valued series from the start, so rate() and absent() work before the first event.
  for (const reason of REFUSAL_REASONS) refusals.inc({ reason }, 0);
  for (const outcome of OUTCOMES) admissions.inc({ outcome }, 0);
  for (const { code } of Object.values(DENIALS)) denials.inc({ code }, 0);
  for (const result of RELOAD_RESULTS) {
    configReloads.inc({ result }, 0);
    tlsReloads.inc({ result }, 0);
  }

  return {
    registry,
    admission(summary, seconds) {
      const outcome: AdmissionOutcome = summary.decision;
      admissions.inc({ outcome });
      duration.observe({ outcome }, seconds);
      for (const { runtime, reason } of summary.skipped) skips.inc({ runtime, reason });
      if (summary.code !== undefined) denials.inc({ code: summary.code });
    },
    admissionFailed(outcome, seconds) {
      admissions.inc({ outcome });
      duration.observe({ outcome }, seconds);
    },
    configReload(result, invalid) {
      configReloads.inc({ result });
      if (invalid === undefined) return;
      invalidKeys.set(invalid.length);
      keyFallback.reset();
      for (const { key, fellBack } of invalid) if (fellBack) keyFallback.set({ key }, 1);
    },
    tlsReload(result) {
      tlsReloads.inc({ result });
    },
    tlsCertificate(notAfter) {
      certNotAfter.set(notAfter.getTime() / 1000);
    },
    refused(reason) {
      refusals.inc({ reason });
    },
    inflightBytes(bytes) {
      inflight.set(bytes);
    },
    openConnections(count) {
      connections.set(count);
    },
  };
}
