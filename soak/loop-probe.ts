/**
 * Preloaded into `serve` (`--import`) when SOAK_LOOP_PROBE=1. Every 250 ms it appends to loop-probe.jsonl in
 * serve's working directory the longest stretch of main-thread CPU time between two turns of a 1 ms timer:
 * how long the event loop went without polling its sockets, in CPU rather than wall time, so it reads the same
 * on an idle machine and on a shared one. A fresh connection that arrives during such a stretch waits for it.
 */
import { appendFileSync } from 'node:fs';

export const LOOP_PROBE_FILE = 'loop-probe.jsonl';
const WINDOW_MS = 250;

function threadCpuMs(): number {
  const usage = process.threadCpuUsage();
  return (usage.user + usage.system) / 1000;
}

let last = threadCpuMs();
let longest = 0;
let windowStart = Date.now();

function tick(): void {
  const now = threadCpuMs();
  longest = Math.max(longest, now - last);
  last = now;
  const at = Date.now();
  if (at - windowStart >= WINDOW_MS) {
    appendFileSync(LOOP_PROBE_FILE, `${JSON.stringify({ at, longestCpuMs: Math.round(longest * 10) / 10 })}\n`);
    longest = 0;
    windowStart = at;
  }
  setTimeout(tick, 1).unref();
}

// Only inside serve: the harness imports this module for the file name, and must not start a probe itself.
if (process.env.SOAK_LOOP_PROBE_ACTIVE === '1') setTimeout(tick, 1).unref();
