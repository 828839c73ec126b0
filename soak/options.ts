/**
 * Phase sizes for `npm run soak`. The defaults are the full run that docs/reliability.md records; SOAK_SCALE
 * shrinks every count and hold time at once (0.01 checks that the harness works in about two minutes), and
 * each size can be set on its own.
 */
import { knob } from '../harness/knobs.js';

export const PHASES = [
  'fuzz',
  'never-read',
  'stalled-body',
  'byte-at-a-time',
  'slowloris',
  'rotation',
  'config-flips',
  'drain',
] as const;
export type PhaseName = (typeof PHASES)[number];

export interface SoakOptions {
  seed: number;
  phases: readonly PhaseName[];
  fuzzRequests: number;
  fuzzConnections: number;
  fuzzMaxSeconds: number;
  neverReadConnections: number;
  stalledConnections: number;
  byteConnections: number;
  slowlorisConnections: number;
  /** How long each slow-client mode holds its connections; longer than Node's 60 s headers timeout plus its 30 s check. */
  slowHoldSeconds: number;
  rotations: number;
  badRotations: number;
  flips: number;
  drainRounds: number;
  drainConnections: number;
  /** Normal admissions slower than this count as lost: kube-apiserver gives up after the webhook's timeoutSeconds. */
  admissionTimeoutMs: number | undefined;
  logLevel: string;
  /** Pass serve short time limits (the flags it has); 0 runs it with its defaults. */
  shortLimits: boolean;
  extraServeArgs: string[];
  /** serve's NODE_OPTIONS in place of the Deployment's (empty: none), to compare heap flags or profile. */
  nodeOptions: string | undefined;
  /** Preload soak/loop-probe.ts into serve and report its longest CPU stretches per slow-client phase. */
  loopProbe: boolean;
}

/** A size from the environment: any number from 0 up. */
const number = (name: string, fallback: number): number => knob(name, fallback, 'non-negative number');

export function readOptions(): SoakOptions {
  const scale = number('SOAK_SCALE', 1);
  const count = (name: string, full: number, least: number): number =>
    Math.round(number(name, Math.max(least, Math.round(full * scale))));
  const seconds = (name: string, full: number, least: number): number => number(name, Math.max(least, full * scale));

  const wanted = (process.env.SOAK_PHASES ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  const unknown = wanted.filter((name) => !(PHASES as readonly string[]).includes(name));
  if (unknown.length > 0) throw new Error(`SOAK_PHASES: unknown ${unknown.join(', ')} (known: ${PHASES.join(', ')})`);
  const rotations = count('SOAK_ROTATIONS', 100, 2);
  const timeout = process.env.SOAK_ADMISSION_TIMEOUT_MS;

  return {
    seed: Math.trunc(number('SOAK_SEED', Date.now() % 1_000_000)),
    phases: wanted.length === 0 ? PHASES : PHASES.filter((name) => wanted.includes(name)),
    fuzzRequests: count('SOAK_FUZZ_REQUESTS', 1_000_000, 100),
    fuzzConnections: Math.max(1, Math.round(number('SOAK_FUZZ_CONNECTIONS', 8))),
    fuzzMaxSeconds: seconds('SOAK_FUZZ_MAX_SECONDS', 3_600, 120),
    neverReadConnections: count('SOAK_NEVER_READ_CONNECTIONS', 200, 2),
    stalledConnections: count('SOAK_STALLED_CONNECTIONS', 100, 2),
    byteConnections: count('SOAK_BYTE_CONNECTIONS', 2_000, 2),
    slowlorisConnections: count('SOAK_SLOWLORIS_CONNECTIONS', 2_000, 2),
    slowHoldSeconds: seconds('SOAK_SLOW_SECONDS', 100, 5),
    rotations,
    badRotations: count('SOAK_BAD_ROTATIONS', 10, 1),
    flips: count('SOAK_FLIPS', 200, 5),
    drainRounds: count('SOAK_DRAIN_ROUNDS', 8, 1),
    drainConnections: Math.max(1, Math.round(number('SOAK_DRAIN_CONNECTIONS', 16))),
    admissionTimeoutMs: timeout === undefined || timeout === '' ? undefined : number('SOAK_ADMISSION_TIMEOUT_MS', 0),
    logLevel: process.env.SOAK_LOG_LEVEL ?? 'info',
    shortLimits: process.env.SOAK_SHORT_LIMITS !== '0',
    extraServeArgs: (process.env.SOAK_SERVE_ARGS ?? '').split(' ').filter((s) => s !== ''),
    nodeOptions: process.env.SOAK_NODE_OPTIONS,
    loopProbe: process.env.SOAK_LOOP_PROBE === '1',
  };
}
