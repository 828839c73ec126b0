/**
 * The review function timed in this process, without TLS or HTTP: what the webhook's own work costs per review
 * and how it grows with the pod. It runs the product's modules from src/, compiled with the bench.
 */
import { performance } from 'node:perf_hooks';
import { reviewBytes } from '../src/admission/answers.js';
import { encodePatch } from '../src/admission/patch.js';
import { reviewAdmission } from '../src/admission/review.js';
import { offlineDeps } from '../src/cli/offline-deps.js';
import type { EditOperation } from '../src/injection/index.js';
import { median } from '../harness/quantiles.js';
import { manyAnnotationsReview, reviewText, shapeName, type ShapeReviews } from './reviews.js';
import { HELD_LOOP_RUNS, INPROCESS_MS, MANY_ANNOTATIONS, SCALE, progress } from './settings.js';

/**
 * What the server does with a parsed body: review it, then turn the answer into the bytes it sends; given the
 * body's text, as its JSON parser keeps it, the review reads the size rule's maps from the text.
 */
export type ReviewFn = (
  body: unknown,
  text?: string,
) => Promise<{ decision: string; answerBytes: number; patch: string | undefined }>;

/** The review with the deps `sandbox-injector review` builds: the ConfigMap from the file, runtimes from the pod's annotations. */
export async function reviewFunction(configFile: string): Promise<ReviewFn> {
  const deps = await offlineDeps(configFile, 'skip', {
    stdin: process.stdin,
    stdout: process.stdout,
    stderr: process.stderr,
  });
  return async (body, text) => {
    const outcome = await reviewAdmission(body, deps, text);
    if (outcome.kind !== 'response') throw new Error(`bench review refused: ${JSON.stringify(outcome)}`);
    return {
      decision: outcome.summary.decision,
      answerBytes: reviewBytes(outcome.review).length,
      patch: outcome.review.response?.patch,
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
function timeEncoding(operations: EditOperation[], expected: string, budgetMs: number): number {
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
  const operations = JSON.parse(Buffer.from(a.patch ?? '', 'base64').toString('utf8')) as EditOperation[];
  return {
    label,
    containers,
    bytes: injecting.length,
    parseUs: timeParse(injecting, budgetMs),
    injectingUs: await timeReviews(review, injecting, budgetMs),
    patchTextUs: timeEncoding(operations, a.patch ?? '', budgetMs),
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

export interface InProcess {
  held: HeldLoop;
  shapes: ReviewTiming[];
  scale: ReviewTiming[];
  injecting: Linearity;
  noop: Linearity;
}

/** Every in-process figure: the review of each shape, of pods of growing size, and of the huge annotation map. */
export async function timeInProcess(configFile: string, shapes: ShapeReviews[]): Promise<InProcess> {
  const review = await reviewFunction(configFile);
  const envVars = shapes[0]?.envVarsPerContainer ?? 0;
  progress(`in-process: review function on ${shapes.length} shapes and on ${SCALE.join(', ')} containers`);
  const first = shapes[0];
  // One pass thrown away: the first body timed otherwise pays for the JIT warming up the whole review path.
  if (first !== undefined)
    await timePair(review, 'warm-up', first.shape.containers, first.injecting, first.noop, INPROCESS_MS);
  const timings: ReviewTiming[] = [];
  for (const reviews of shapes) {
    const { shape, injecting, noop } = reviews;
    timings.push(await timePair(review, shapeName(shape), shape.containers, injecting, noop, INPROCESS_MS));
  }
  const scale: ReviewTiming[] = [];
  for (const containers of SCALE) {
    const { injecting, noop } = scaledPair(containers, envVars);
    scale.push(await timePair(review, `${containers} containers`, containers, injecting, noop, INPROCESS_MS));
  }
  progress(`in-process: a review of a pod with ${MANY_ANNOTATIONS} annotations, ${HELD_LOOP_RUNS} times`);
  const held = await heldLoop(review, MANY_ANNOTATIONS, HELD_LOOP_RUNS);
  return {
    held,
    shapes: timings,
    scale,
    injecting: linearity(scale, (t) => t.injectingUs),
    noop: linearity(scale, (t) => t.noopUs),
  };
}
