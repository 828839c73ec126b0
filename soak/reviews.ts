/**
 * The reviews the soak sends: the example review (examples/review.json, the pod `npm start`'s README shows)
 * for normal admissions, and that review plus every conformance fixture's pod as fuzz seeds.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoPath } from '../harness/repo.js';
import { podCreateReview } from '../src/kube-shapes/pod-create-review.js';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export interface Seed {
  name: string;
  review: JsonObject;
}

const EXAMPLE = repoPath('examples/review.json');
const CONFORMANCE = repoPath('test/fixtures/conformance');

export function exampleReview(): JsonObject {
  return JSON.parse(readFileSync(EXAMPLE, 'utf8')) as JsonObject;
}

/** A review's text with its uid replaced; normal admissions each carry their own, so answers can be matched. */
export function reviewText(review: JsonObject, uid: string): string {
  const request = review.request as JsonObject;
  return JSON.stringify({ ...review, request: { ...request, uid } });
}

export function fuzzSeeds(): Seed[] {
  const seeds: Seed[] = [{ name: 'examples/review.json', review: exampleReview() }];
  for (const file of readdirSync(CONFORMANCE)
    .filter((f) => f.endsWith('.json'))
    .sort()) {
    const fixture = JSON.parse(readFileSync(join(CONFORMANCE, file), 'utf8')) as { pod?: Json };
    if (fixture.pod === undefined) continue;
    // The review of creating the pod in `default`, as the CLI sends it; its envelope holds JSON values only.
    const review = podCreateReview(fixture.pod, { uid: `seed-${file}`, namespace: 'default' });
    seeds.push({ name: file, review: review as unknown as JsonObject });
  }
  return seeds;
}

/**
 * A review whose answer is several times its own size: sixteen containers, each with a command and three
 * exec probes that Auto wraps. What a client that never reads its answers makes the server hold.
 */
export function heavyReview(): JsonObject {
  const review = exampleReview();
  const probe = (what: string, i: number): Json => ({
    exec: { command: ['/bin/sh', '-c', `test -f /tmp/${what}-${i}`] },
  });
  const containers: Json[] = Array.from({ length: 16 }, (_, i) => ({
    name: i === 0 ? 'main' : `worker-${i}`,
    image: `registry.example.com/app:${i}`,
    command: ['python', '-m', `app.worker_${i}`],
    livenessProbe: probe('live', i),
    readinessProbe: probe('ready', i),
    startupProbe: probe('started', i),
  }));
  const request = review.request as JsonObject;
  const pod = request.object as JsonObject;
  return { ...review, request: { ...request, object: { ...pod, spec: { ...(pod.spec as JsonObject), containers } } } };
}
