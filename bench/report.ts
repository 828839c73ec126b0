/** The webhook bench's report: the headline against the targets, each shape's tables, the in-process figures. */
import { cpus, release, totalmem } from 'node:os';
import type { InProcess, Linearity } from './inprocess.js';
import type { Measurement, ShapeResult } from './floors.js';
import { shapeName } from './reviews.js';
import {
  CONNECTIONS,
  FIXED_RATE,
  HELD_LOOP_MS,
  LINEAR_SLOPE,
  RATE_CLIENT,
  RATE_SECONDS,
  ROUNDS,
  SCALE,
  SECONDS,
  SENDER_LAG_MS,
  TARGET,
  WARMUP,
} from './settings.js';

const x = (value: number): string => `${value.toFixed(2)}x`;
const ms = (value: number): string => value.toFixed(2);
const verdict = (ok: boolean): string => (ok ? 'met' : 'NOT met');

function headline(r: ShapeResult): {
  lines: string[];
  throughput: number;
  cpu: number;
  p99: number;
  errors: number;
  noop: number;
  sameAnswer: number;
} {
  const { floor, injecting, noop: noopPeak, parseOnly, sameAnswer: cached } = r.peak;
  const noop = noopPeak.admissionsPerSecond / parseOnly.admissionsPerSecond;
  const sameAnswer = injecting.admissionsPerSecond / cached.admissionsPerSecond;
  const throughput = injecting.admissionsPerSecond / floor.admissionsPerSecond;
  const cpu = injecting.cpuMsPerAdmission / floor.cpuMsPerAdmission;
  const p99 = r.atRate.injecting.p99 / r.atRate.floor.p99;
  const errors = Object.values(r.peak)
    .concat(Object.values(r.atRate))
    .reduce((sum, m) => sum + m.errors, 0);
  const clean = errors === 0;
  const warning = senderWarning(r.atRate.floor, r.atRate.injecting);
  const late = warning.length > 0 ? ' (unreliable: the sender was late)' : '';
  return {
    throughput,
    cpu,
    p99,
    errors,
    noop,
    sameAnswer,
    lines: [
      `  injecting / same-work floor, admissions/s:      ${x(throughput)}   target >= ${TARGET.throughput}x: ${verdict(clean && throughput >= TARGET.throughput)}`,
      `  injecting / same-work floor, CPU per admission: ${x(cpu)}   target <= ${TARGET.cpu}x: ${verdict(clean && cpu <= TARGET.cpu)}`,
      `  p99 at ${r.rate}/s (${FIXED_RATE === undefined ? "half the same-work floor's peak" : 'BENCH_RATE'}), injecting / same-work floor: ${ms(r.atRate.injecting.p99)} / ${ms(r.atRate.floor.p99)} ms = ${x(p99)}   target <= ${TARGET.p99}x: ${verdict(clean && p99 <= TARGET.p99)}${late}`,
      `  no-op webhook / parse-only floor, admissions/s: ${x(noop)}   target >= ${TARGET.noop}x: ${verdict(clean && noop >= TARGET.noop)} (CPU per admission ${x(noopPeak.cpuMsPerAdmission / parseOnly.cpuMsPerAdmission)})`,
      `  beside them: injecting / same-answer floor (cached bytes), admissions/s ${x(sameAnswer)}, CPU per admission ${x(injecting.cpuMsPerAdmission / cached.cpuMsPerAdmission)}`,
      `  errors in all runs of this review: ${errors}`,
      ...warning,
    ],
  };
}

/**
 * Latency at a fixed rate counts from when each review was due, so a sender that could not keep to the schedule
 * (the machine busy) adds its own delay to both p99s and the ratio says less than it seems to.
 */
function senderWarning(...measurements: Measurement[]): string[] {
  const lag = Math.max(...measurements.map((m) => m.senderLagP99 ?? 0));
  if (lag <= SENDER_LAG_MS) return [];
  return [
    `  (the sender ran up to ${ms(lag)} ms late at p99, above ${SENDER_LAG_MS} ms: the p99s include its delay; rerun on a quieter machine)`,
  ];
}

export function report(
  commit: string,
  startedAt: Date,
  load: [number[], number[]],
  results: ShapeResult[],
  local: InProcess,
): string {
  const cpu = cpus();
  const lines: string[] = [
    `sandbox-injector bench, ${startedAt.toISOString().slice(0, 16).replace('T', ' ')} UTC, commit ${commit}`,
    `machine: ${cpu.length} x ${cpu[0]?.model.trim() ?? 'unknown CPU'}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM, Linux ${release()}, Node ${process.version}`,
    `load average (1/5/15 min) before: ${load[0].map((l) => l.toFixed(2)).join(' ')}, after: ${load[1].map((l) => l.toFixed(2)).join(' ')}` +
      ` (above ${cpu.length}, the core count, figures are noisy)`,
    `load: ${CONNECTIONS} keep-alive HTTPS connections from this process; peak: median of ${ROUNDS} interleaved rounds of ${SECONDS} s` +
      ` after ${WARMUP} s of warm-up per target; steady rate: ${RATE_CLIENT === 'steady' ? 'open loop' : 'autocannon overallRate'}, ${ROUNDS} x ${RATE_SECONDS} s, median p99`,
    '',
  ];
  const rows: string[] = [];
  const loadText = `${load[0][0]?.toFixed(2) ?? '?'} / ${load[1][0]?.toFixed(2) ?? '?'}`;
  const mode = `${ROUNDS} x ${SECONDS} s, ${CONNECTIONS} conn.${RATE_CLIENT === 'steady' ? '' : ', autocannon rate'}${FIXED_RATE === undefined ? '' : `, at ${FIXED_RATE}/s`}`;
  for (const r of results) {
    const h = headline(r);
    const { shape, envVarsPerContainer } = r.reviews;
    lines.push(
      `== ${shapeName(shape)} (${envVarsPerContainer} env vars each): answer ${r.answerBytes} B, patch ${r.patchBytes} B decoded, ${r.tls}`,
    );
    lines.push('HEADLINE', ...h.lines, '');
    lines.push('| peak | admissions/s | p50 ms | p99 ms | server CPU | CPU ms/admission | RSS MiB | errors |');
    lines.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
    for (const m of [r.peak.parseOnly, r.peak.sameAnswer, r.peak.floor, r.peak.injecting, r.peak.noop]) {
      lines.push(
        `| ${m.label} | ${m.admissionsPerSecond.toFixed(0)} | ${ms(m.p50)} | ${ms(m.p99)} | ${m.cpuPercent.toFixed(0)}% | ${m.cpuMsPerAdmission.toFixed(3)} | ${m.rssMiB.toFixed(0)} | ${m.errors} |`,
      );
    }
    lines.push('');
    const client = RATE_CLIENT === 'steady' ? 'steady' : 'autocannon overallRate';
    lines.push(
      `| at ${r.rate}/s, ${client} | answered/s | p50 ms | p99 ms | max ms | CPU ms/admission | sender lag p99 ms | errors |`,
    );
    lines.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
    for (const m of [r.atRate.floor, r.atRate.injecting]) {
      lines.push(
        `| ${m.label} | ${m.admissionsPerSecond.toFixed(0)} | ${ms(m.p50)} | ${ms(m.p99)} | ${ms(m.max)} | ${m.cpuMsPerAdmission.toFixed(3)} | ${m.senderLagP99 === undefined ? '-' : ms(m.senderLagP99)} | ${m.errors} |`,
      );
    }
    const { parseOnly, sameAnswer, floor } = r.peak;
    lines.push('');
    lines.push(
      `same-answer floor / parse-only floor: admissions/s ${x(sameAnswer.admissionsPerSecond / parseOnly.admissionsPerSecond)}, ` +
        `CPU per admission ${x(sameAnswer.cpuMsPerAdmission / parseOnly.cpuMsPerAdmission)} (what the bigger answer costs)`,
    );
    lines.push(
      `same-work floor / same-answer floor: admissions/s ${x(floor.admissionsPerSecond / sameAnswer.admissionsPerSecond)}, ` +
        `CPU per admission ${x(floor.cpuMsPerAdmission / sameAnswer.cpuMsPerAdmission)} (what making the answer's text costs)`,
    );
    lines.push('');
    rows.push(
      `| ${startedAt.toISOString().slice(0, 16).replace('T', ' ')} | ${commit} | ${cpu.length} x ${cpu[0]?.model.trim() ?? '?'} | ` +
        `${loadText} | ${mode} | ${shape.containers} / ${shape.bytes} B | ${x(h.throughput)} | ${x(h.cpu)} | ${x(h.p99)} | ${h.errors} | ${x(h.noop)} | ${x(h.sameAnswer)} |`,
    );
  }
  lines.push(
    "In-process, the review function and the answer's serialization on a parsed body (µs per review, lower quartile of batches):",
  );
  lines.push(
    '| review | containers | body B | JSON.parse of the body | injecting | of which, its patch from the operations | no-op | no-op / JSON.parse |',
  );
  lines.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const t of [...local.shapes, ...local.scale]) {
    lines.push(
      `| ${t.label} | ${t.containers} | ${t.bytes} | ${t.parseUs.toFixed(1)} | ${t.injectingUs.toFixed(1)} | ` +
        `${t.patchTextUs.toFixed(1)} | ${t.noopUs.toFixed(1)} | ${x(t.noopUs / t.parseUs)} |`,
    );
  }
  const first = SCALE.reduce((a, b) => Math.min(a, b));
  const last = SCALE.reduce((a, b) => Math.max(a, b));
  const linear = (l: Linearity): string =>
    `${x(l.slopeRatio)} (${l.slopeRatio <= LINEAR_SLOPE ? 'linear' : 'NOT linear'})`;
  lines.push(
    `linearity, ${last} vs ${first} containers: injecting ${x(local.injecting.growth)} the time, no-op ${x(local.noop.growth)}; ` +
      `cost per added container, large pods / small pods: injecting ${linear(local.injecting)}, no-op ${linear(local.noop)}` +
      ` (1x is linear; target <= ${LINEAR_SLOPE}x)`,
  );
  const { held } = local;
  lines.push('');
  lines.push(
    `${held.keys}-key annotations (a ${held.bytes} B review, legal: under 256 KiB of annotations), ms beyond parse: ` +
      `${held.beyondParseMs.toFixed(2)} median, ${held.maxBeyondParseMs.toFixed(2)} max of ${held.runs} (JSON.parse ${held.parseMs.toFixed(2)}); ` +
      `target < ${HELD_LOOP_MS} ms: ${held.beyondParseMs < HELD_LOOP_MS ? 'met' : 'NOT met'}`,
  );
  const scaleNote = `in-process ${last} vs ${first} containers: injecting ${x(local.injecting.growth)}, per-container slope ${x(local.injecting.slopeRatio)}`;
  lines.push('');
  lines.push(`history rows for docs/benchmark.md (${scaleNote}):`, ...rows);
  return `${lines.join('\n')}\n`;
}
