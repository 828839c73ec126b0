/**
 * The webhook bench's settings (`npm run bench:webhook`): its knobs, read from the environment before anything
 * runs, and the targets its headline is held to. docs/benchmark.md lists the knobs.
 */
import { knob } from '../harness/knobs.js';
import { DEFAULT_SHAPES, parseShapes } from './reviews.js';

export const QUICK = process.env.BENCH_QUICK === '1';
export const SECONDS = knob('BENCH_SECONDS', QUICK ? 2 : 10);
export const ROUNDS = Math.round(knob('BENCH_ROUNDS', QUICK ? 1 : 3));
export const WARMUP = knob('BENCH_WARMUP', QUICK ? 1 : Math.min(5, SECONDS));
export const CONNECTIONS = Math.round(knob('BENCH_CONNECTIONS', 16));
export const RATE_SECONDS = knob('BENCH_RATE_SECONDS', SECONDS);
// A fixed rate instead of half the floor's peak: to compare commits or load clients at one rate.
export const FIXED_RATE = process.env.BENCH_RATE === undefined ? undefined : Math.round(knob('BENCH_RATE', 1));
export const RATE_CLIENT = process.env.BENCH_RATE_CLIENT ?? 'steady';
export const INPROCESS_MS = knob('BENCH_INPROCESS_MS', QUICK ? 150 : 600);
// A quick run checks the harness on the review only.
export const SHAPES = parseShapes(
  process.env.BENCH_REVIEWS ?? (QUICK ? (DEFAULT_SHAPES.split(',')[0] ?? '') : DEFAULT_SHAPES),
);
export const SCALE = (process.env.BENCH_SCALE ?? '1,4,16,64').split(',').map(Number);
if (RATE_CLIENT !== 'steady' && RATE_CLIENT !== 'autocannon')
  throw new Error('BENCH_RATE_CLIENT: steady or autocannon');
if (SCALE.some((n) => !Number.isInteger(n) || n < 1)) throw new Error('BENCH_SCALE: container counts, e.g. 1,4,16,64');
export const MANY_ANNOTATIONS = Math.round(knob('BENCH_ANNOTATIONS', 30_000));
export const HELD_LOOP_RUNS = QUICK ? 5 : 15;

/** The goals, against the same-work floor; the no-op path against the parse-only floor. */
export const TARGET = { throughput: 0.85, cpu: 1.2, p99: 1.5, noop: 0.9 };
/** Cost per added container may grow this much from small to large pods and still count as linear; a quadratic cost gives ~4.7x. */
export const LINEAR_SLOPE = 2;
/** Issue 10, item 5: no review may hold the event loop more than a few ms beyond its parse. */
export const HELD_LOOP_MS = 5;
/** Above this p99 lateness of the fixed-rate sender, its p99s say more about the sender than the servers. */
export const SENDER_LAG_MS = 1;

export const progress = (line: string): void => void process.stderr.write(`${line}\n`);
