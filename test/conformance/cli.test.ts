import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import {
  expectConformance,
  loadConformanceCases,
  OUR_CONFORMANCE_DIR,
  type ConformanceCase,
  reviewFor,
  type ReviewResponseLike,
} from '../support/conformance.js';

const run = promisify(execFile);
const CLI = new URL('../../dist/cli/main.js', import.meta.url).pathname;
const work = mkdtempSync(join(tmpdir(), 'si-conformance-'));

describe('conformance cases through the built CLI (`sandbox-injector review`)', () => {
  for (const testCase of loadConformanceCases()) it(testCase.file, () => reviewCase(testCase));
});

describe('our own conformance-style cases (test/fixtures/conformance-ours) through the built CLI', () => {
  for (const testCase of loadConformanceCases(OUR_CONFORMANCE_DIR)) it(testCase.file, () => reviewCase(testCase));
});

async function reviewCase(testCase: ConformanceCase): Promise<void> {
  const reviewPath = join(work, `${testCase.name}.review.json`);
  writeFileSync(reviewPath, JSON.stringify(reviewFor(testCase.pod, `uid-${testCase.name}`)));
  const args = [CLI, 'review', '-f', reviewPath, ...(testCase.flags ?? [])];
  if (testCase.configMap !== undefined && testCase.configMap !== null) {
    const configPath = join(work, `${testCase.name}.configmap.json`);
    writeFileSync(configPath, JSON.stringify(testCase.configMap));
    args.push('--config-file', configPath);
  }
  const { stdout } = await run(process.execPath, args);
  const review = JSON.parse(stdout) as { apiVersion: string; kind: string; response: ReviewResponseLike };
  expect(review.apiVersion).toBe('admission.k8s.io/v1');
  expect(review.kind).toBe('AdmissionReview');
  expectConformance(testCase, review.response);
}
