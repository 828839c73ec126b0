/**
 * The review function timed in this process, without TLS or HTTP: what the webhook's own work costs per review
 * and how it grows with the pod. It runs the built modules in dist/, the code the server runs, loaded by path
 * at run time so the bench does not compile against src/ while src/ is being changed.
 */
import { performance } from 'node:perf_hooks';
import { median } from './quantiles.js';
import { manyAnnotationsReview, reviewText } from './reviews.js';

interface Outcome {
  kind: string;
  review?: { response?: { patch?: string } };
  summary?: { decision?: string };
}
interface ReviewModule {
  /** The third argument: the body's text since the size rule reads it itself, a map scan before, nothing earlier. */
  reviewAdmission: (body: unknown, deps: unknown, textOrMaps?: unknown) => Promise<Outcome>;
}
interface PodLimitsModule {
  mapsOfLargeBody?: (text: string) => unknown;
}
interface SerializeModule {
  reviewBytes?: (review: unknown) => Buffer;
  reviewJson?: (review: unknown) => string;
}
interface OfflineDepsModule {
  offlineDeps: (configFile: string, postStartConflict: string, io: unknown) => Promise<unknown>;
}

/**
 * What the server does with a parsed body: review it, then turn the answer into the bytes it sends. Given the body's text, also
 * what its JSON parser does past the parse: measure a large body's label and annotation maps in the text.
 */
export type ReviewFn = (
  body: unknown,
  text?: string,
) => Promise<{ decision: string; answerBytes: number; patch: string | undefined }>;

/** Turns recorded operations into the patch the answer carries (JSON text, UTF-8, base64). */
export type PatchEncoder = (operations: unknown[]) => string;

interface PatchModule {
  encodePatch: PatchEncoder;
}

export async function loadPatchEncoder(distRoot: string): Promise<PatchEncoder> {
  const { encodePatch } = (await import(new URL('admission/patch.js', distRoot).href)) as PatchModule;
  return encodePatch;
}

export async function loadReview(distRoot: string, configFile: string): Promise<ReviewFn> {
  const load = (path: string): Promise<unknown> => import(new URL(path, distRoot).href);
  const { reviewAdmission } = (await load('admission/review.js')) as ReviewModule;
  // reviewBytes lives in answers.js; builds before that had it in serialize.js, and earlier ones only reviewJson.
  const answers = (await load('admission/answers.js')) as SerializeModule;
  const { reviewBytes, reviewJson } =
    answers.reviewBytes !== undefined ? answers : ((await load('admission/serialize.js')) as SerializeModule);
  const serialize = (review: unknown): number =>
    reviewBytes !== undefined ? reviewBytes(review).length : (reviewJson?.(review).length ?? 0);
  // Builds from before the text scan have no mapsOfLargeBody: their review walks the parsed maps. Builds since the
  // size rule moved into admission have none either, and take the body's text (older ones ignore it).
  const { mapsOfLargeBody } = (await load('admission/pod-limits.js')) as PodLimitsModule;
  const { offlineDeps } = (await load('cli/offline-deps.js')) as OfflineDepsModule;
  // The deps `sandbox-injector review` builds: the ConfigMap from the file, runtimes from the pod's annotations.
  const deps = await offlineDeps(configFile, 'skip', {
    stdin: process.stdin,
    stdout: process.stdout,
    stderr: process.stderr,
  });
  return async (body, text) => {
    const third = mapsOfLargeBody === undefined || text === undefined ? text : mapsOfLargeBody(text);
    const outcome = await reviewAdmission(body, deps, third);
    if (outcome.kind !== 'response') throw new Error(`bench review refused: ${JSON.stringify(outcome)}`);
    return {
      decision: outcome.summary?.decision ?? '?',
      answerBytes: serialize(outcome.review),
      patch: outcome.review?.response?.patch,
    };
  };
}

/**
 * µs per call, the lower quartile of batches. Each batch reviews freshly parsed copies, parsed outside the
 * timed part: the same object twice would let a cache keyed on the pod answer for free, which no server sees.
 */
async function timeReviews(review: ReviewFn, text: string, budgetMs: number): Promise<number> {
  const batch = Math.max(8, Math.min(256, Math.ceil(2_000_000 / text.length)));
  const perCall: number[] = [];
  const end = performance.now() + budgetMs;
  do {
    const bodies = Array.from({ length: batch }, (): unknown => JSON.parse(text));
    const start = performance.now();
    for (const body of bodies) await review(body);
    perCall.push(((performance.now() - start) * 1000) / batch);
  } while (performance.now() < end);
  return lowerQuartile(perCall);
}

/**
 * µs to make the patch from its operations (the lower quartile of batches), checked against the answer's own
 * patch: what building the answer's largest field costs, whatever the injection does before it.
 */
function timeEncoding(encodePatch: PatchEncoder, operations: unknown[], expected: string, budgetMs: number): number {
  if (encodePatch(operations) !== expected)
    throw new Error("the patch made again from its operations differs from the answer's");
  const batch = 64;
  const perCall: number[] = [];
  const end = performance.now() + budgetMs;
  let keep = '';
  do {
    const start = performance.now();
    for (let i = 0; i < batch; i += 1) keep = encodePatch(operations);
    perCall.push(((performance.now() - start) * 1000) / batch);
  } while (performance.now() < end);
  if (keep.length === 0) throw new Error('nothing encoded');
  return lowerQuartile(perCall);
}

function timeParse(text: string, budgetMs: number): number {
  const batch = Math.max(8, Math.min(256, Math.ceil(2_000_000 / text.length)));
  const perCall: number[] = [];
  const end = performance.now() + budgetMs;
  let keep: unknown;
  do {
    const start = performance.now();
    for (let i = 0; i < batch; i += 1) keep = JSON.parse(text);
    perCall.push(((performance.now() - start) * 1000) / batch);
  } while (performance.now() < end);
  // Read once so the parse cannot be dropped as dead code.
  if (keep === undefined) throw new Error('nothing parsed');
  return lowerQuartile(perCall);
}

/**
 * On a shared machine other processes only ever add time to a batch, and under load they do so to most
 * batches, which moves the median; the lower quartile follows the code and still counts its garbage collection.
 */
function lowerQuartile(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.floor(sorted.length / 4)] ?? NaN;
}

export interface ReviewTiming {
  label: string;
  containers: number;
  bytes: number;
  parseUs: number;
  injectingUs: number;
  /** Of the injecting review: making its patch from the recorded operations alone (JSON text, UTF-8, base64). */
  patchTextUs: number;
  noopUs: number;
}

/** Times the injecting and the no-op review of one body pair, after a warm-up, and checks they do as meant. */
export async function timePair(
  review: ReviewFn,
  encodePatch: PatchEncoder,
  label: string,
  containers: number,
  injecting: string,
  noop: string,
  budgetMs: number,
): Promise<ReviewTiming> {
  const [a, b] = await Promise.all([review(JSON.parse(injecting)), review(JSON.parse(noop))]);
  if (a.decision !== 'injected' || b.decision !== 'unchanged') {
    throw new Error(`${label}: the reviews decided ${a.decision} and ${b.decision}, not injected and unchanged`);
  }
  await timeReviews(review, injecting, budgetMs / 2);
  await timeReviews(review, noop, budgetMs / 2);
  const operations = JSON.parse(Buffer.from(a.patch ?? '', 'base64').toString('utf8')) as unknown[];
  return {
    label,
    containers,
    bytes: injecting.length,
    parseUs: timeParse(injecting, budgetMs),
    injectingUs: await timeReviews(review, injecting, budgetMs),
    patchTextUs: timeEncoding(encodePatch, operations, a.patch ?? '', budgetMs),
    noopUs: await timeReviews(review, noop, budgetMs),
  };
}

/** The pod of `containers` containers as the first shape builds each one, unpadded. */
export function scaledPair(containers: number, envVars: number): { injecting: string; noop: string } {
  return {
    injecting: reviewText(containers, envVars, true, 'bench-scale-injecting'),
    noop: reviewText(containers, envVars, false, 'bench-scale-unchanged'),
  };
}

export interface Linearity {
  /** Time at the largest pod over time at the smallest. */
  growth: number;
  /**
   * µs per added container between the middle and the largest pod, over the same between the smallest and the
   * middle: 1 when each container costs the same whatever the pod's size, more when cost grows faster.
   */
  slopeRatio: number;
}

export function linearity(timings: ReviewTiming[], pick: (t: ReviewTiming) => number): Linearity {
  const sorted = [...timings].sort((x, y) => x.containers - y.containers);
  const first = sorted[0];
  const middle = sorted[Math.floor(sorted.length / 2)];
  const last = sorted[sorted.length - 1];
  if (first === undefined || middle === undefined || last === undefined || sorted.length < 3) {
    return { growth: NaN, slopeRatio: NaN };
  }
  const low = (pick(middle) - pick(first)) / (middle.containers - first.containers);
  const high = (pick(last) - pick(middle)) / (last.containers - middle.containers);
  return { growth: pick(last) / pick(first), slopeRatio: high / low };
}

export interface HeldLoop {
  keys: number;
  bytes: number;
  /** Medians over the runs, in ms: JSON.parse of the body, and the review and its answer after it. */
  parseMs: number;
  beyondParseMs: number;
  /** The longest review of the runs, in ms. */
  maxBeyondParseMs: number;
  runs: number;
}

/**
 * How long one review of a pod with `keys` annotations holds the event loop beyond its parse: each run parses
 * a fresh copy (timed apart), then, as the server does, measures the maps in the text (a large body), reviews it
 * and serializes the answer, in one go.
 */
export async function heldLoop(review: ReviewFn, keys: number, runs: number): Promise<HeldLoop> {
  const text = manyAnnotationsReview(keys);
  const parse: number[] = [];
  const beyond: number[] = [];
  // Two runs thrown away for the JIT.
  for (let i = 0; i < runs + 2; i++) {
    const started = performance.now();
    const body: unknown = JSON.parse(text);
    const parsed = performance.now();
    const outcome = await review(body, text);
    const done = performance.now();
    if (outcome.decision !== 'injected')
      throw new Error(`${keys} annotations: the review decided ${outcome.decision}, not injected`);
    if (i < 2) continue;
    parse.push(parsed - started);
    beyond.push(done - parsed);
  }
  return {
    keys,
    bytes: text.length,
    parseMs: median(parse),
    beyondParseMs: median(beyond),
    maxBeyondParseMs: Math.max(...beyond),
    runs,
  };
}
