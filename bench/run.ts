/**
 * The webhook bench (the first step of `npm run bench`; alone: `npm run bench:webhook`): the built webhook (one
 * process, as `npm start` runs it) against bare Fastify HTTPS servers with the same TLS and JSON parser, side by
 * side in one run, over HTTPS keep-alive.
 *
 *   parse-only floor     bare Fastify: parse the review, answer "allowed"
 *   same-answer floor    bare Fastify: parse the review, answer the webhook's own answer to the injecting
 *                        review, byte for byte, with the request's uid
 *   same-work floor      bare Fastify: parse the review, make that answer per request from the webhook's patch
 *                        operations (held as plain objects): stringify, UTF-8, base64, envelope with the uid
 *   webhook, injecting   a review asking for agent-runtime + csi with policy Auto
 *   webhook, no-op       the same pod, same size, asking for nothing
 *
 * The headline is the webhook against the same-work floor: same parse, same TLS, same bytes on the wire, and
 * the answer's text made per request as no webhook can avoid, so what is left between them is the work of
 * deciding and recording the injection. The same-answer floor, which sends cached bytes, is reported beside it.
 * For each review shape, each target gets a warm-up, then rounds measure the targets in turn so a change in
 * background load hits all of them alike, and the median round is reported (floors.ts, report.ts). Then the webhook and the same-answer floor run at a steady rate of half the floor's peak,
 * for their latency. Before any of it, the review function is timed in-process on pods of growing size.
 * Linux only: CPU and RSS come from /proc. See docs/benchmark.md for the knobs.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { git } from '../harness/repo.js';
import { freePort } from '../harness/serve.js';
import { BASELINE, benchShape, type ShapeResult } from './floors.js';
import { timeInProcess } from './inprocess.js';
import { send, startNode, stop, waitReady, webhookArgs, writeWebhookConfig } from './procs.js';
import { report } from './report.js';
import { shapeReviews } from './reviews.js';
import { SHAPES } from './settings.js';

/** The commit measured, and whether src/ differs from it. */
function commitDescription(): string {
  const commit = git('rev-parse', '--short', 'HEAD');
  const dirty = git('status', '--porcelain', '--', 'src');
  if (commit === undefined || dirty === undefined) return 'unknown (not a git checkout)';
  return dirty === '' ? commit : `${commit} + uncommitted changes in src/`;
}

async function main(): Promise<void> {
  const startedAt = new Date();
  // Read as the run starts, right after the runner built dist/: a commit made during the run is not measured.
  const commit = commitDescription();
  const loadBefore = loadavg();
  const work = await mkdtemp(join(tmpdir(), 'si-bench-'));
  const children: ChildProcess[] = [];
  try {
    const configFile = await writeWebhookConfig(work);
    const shapes = SHAPES.map(shapeReviews);

    // Before the servers start, so the timing has the machine to itself as far as this run goes.
    const local = await timeInProcess(configFile, shapes);

    const webhookPort = await freePort();
    const webhook = startNode(webhookArgs(webhookPort, configFile, join(work, 'certs')));
    children.push(webhook);
    const ca = await waitReady(webhookPort, join(work, 'certs/ca.crt'), webhook);
    // The webhook's TLS policy is its own and may change; the floors take whichever suite it negotiates.
    const cipher = (await send(webhookPort, ca, '', '/readyz')).tls.split(' ')[1] ?? '';
    const floorArgs = [
      '--cert',
      join(work, 'certs/tls.crt'),
      '--key',
      join(work, 'certs/tls.key'),
      '--ciphers',
      cipher,
    ];
    const parseOnlyPort = await freePort();
    const parseOnly = startNode([BASELINE, '--port', String(parseOnlyPort), ...floorArgs]);
    children.push(parseOnly);
    await waitReady(parseOnlyPort, join(work, 'certs/ca.crt'), parseOnly);

    const results: ShapeResult[] = [];
    for (const reviews of shapes) {
      results.push(
        await benchShape(
          reviews,
          { port: webhookPort, pid: webhook.pid ?? 0 },
          { port: parseOnlyPort, pid: parseOnly.pid ?? 0 },
          ca,
          work,
          floorArgs,
        ),
      );
    }
    process.stdout.write(report(commit, startedAt, [loadBefore, loadavg()], results, local));
  } finally {
    for (const child of children) await stop(child);
    await rm(work, { recursive: true, force: true });
  }
}

await main();
