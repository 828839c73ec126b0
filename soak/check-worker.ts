/**
 * Checks answers whose pods are nested too deep for the main thread's stack (the strict applier clones the
 * pod). Started with a 256 MiB stack, so a 100,000-deep value is checked rather than skipped.
 */
import { parentPort } from 'node:worker_threads';
import { checkReviewAnswer } from './check.js';

export interface DeepJob {
  id: number;
  sent: Uint8Array;
  answer: Uint8Array;
}

parentPort?.on('message', (job: DeepJob) => {
  const verdict = checkReviewAnswer(Buffer.from(job.sent), Buffer.from(job.answer));
  parentPort?.postMessage({ id: job.id, verdict });
});
