/**
 * `npm run bench`, `npm run soak` and the bench's parts, as lists of steps: each a child process, printed before
 * it runs, one after the other; the first that fails ends the run with its exit code. Every run first builds the
 * product (the servers the harnesses start) and then the harnesses with the product's sources, one tsconfig, into
 * dist/harness/. Node runs this file from its source, since its first steps build everything else:
 *
 *   node harness/steps.ts bench              the whole benchmark
 *   node harness/steps.ts STEP [ARGS...]     one step, given ARGS, after the builds
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const TSC = 'node_modules/typescript-7/bin/tsc';
const BUILDS: readonly string[][] = [
  [TSC, '-p', 'tsconfig.build.json'],
  [TSC, '-p', 'tsconfig.harness.json'],
];
const OUT = 'dist/harness';

/** Each step's node arguments, its script named from dist/harness/. */
const STEPS: Readonly<Record<string, readonly string[]>> = {
  webhook: ['bench/run.js'],
  'webhook-memory': ['bench/rss.js'],
  wrapper: ['bench/wrapper/run.js'],
  'deliver-client': ['bench/deliver/client-cpu.js'],
  deliver: ['bench/deliver/run.js'],
  'deliver-memory': ['--expose-gc', 'bench/deliver/cache-memory.js'],
  soak: ['soak/run.js'],
};

/** The whole benchmark, in this order. */
const BENCH = ['webhook', 'wrapper', 'deliver-client', 'deliver'];

function usage(): never {
  process.stderr.write(`usage: node harness/steps.ts bench | ${Object.keys(STEPS).join(' | ')} [ARGS...]\n`);
  process.exit(2);
}

/** node's arguments for a step: its own, with the script's path under the build's folder, then `args`. */
function stepArgs(name: string, args: readonly string[]): string[] {
  const step = STEPS[name];
  if (step === undefined) usage();
  return [...step.map((arg) => (arg.endsWith('.js') ? `${OUT}/${arg}` : arg)), ...args];
}

const [name, ...args] = process.argv.slice(2);
if (name === undefined || (name === 'bench' && args.length > 0)) usage();
// npm runs a script in the package's folder, and every path here is named from it.
if (!existsSync('package.json') || !existsSync(TSC)) {
  process.stderr.write(`run from the repository's root, after npm ci (no ${TSC} in ${process.cwd()})\n`);
  process.exit(2);
}
const runs = name === 'bench' ? BENCH.map((step) => stepArgs(step, [])) : [stepArgs(name, args)];
for (const nodeArgs of [...BUILDS, ...runs]) {
  process.stderr.write(`> node ${nodeArgs.join(' ')}\n`);
  const { status, signal, error } = spawnSync(process.execPath, nodeArgs, { stdio: 'inherit' });
  if (error !== undefined) throw error;
  if (status !== 0) {
    process.stderr.write(`> node ${nodeArgs.join(' ')}: ${signal ?? `exit ${status}`}\n`);
    process.exit(status ?? 1);
  }
}
