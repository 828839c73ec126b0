/**
 * One phase's server, from start to exit: its sampler, its descriptors at rest before and after the phase,
 * whether it crashed, and what it logged at error level. Every phase returns a PhaseResult built here.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Target } from './http.js';
import type { Tail } from './load.js';
import type { SoakOptions } from './options.js';
import {
  logProblems,
  Sampler,
  ServeProcess,
  type ExitInfo,
  type Sample,
  type ServeSetup,
  type ServeSpec,
} from './server.js';

/** What a phase is given: its folder, how its server runs, the run's sizes, and when an admission is lost. */
export interface PhaseRun {
  dir: string;
  setup: ServeSetup;
  options: SoakOptions;
  /** Normal admissions slower than this count as lost: kube-apiserver gives up after the webhook's timeout. */
  timeoutMs: number;
}

export interface PhaseResult {
  name: string;
  /** What the phase counts as tried: fuzzed requests, or normal admissions sent while it ran. */
  tried: number;
  failed: number;
  lost: number;
  seconds: number;
  samples: Sample[];
  hwmMiB: number;
  baselineFds: number;
  /** Open descriptors once the phase's clients were gone; undefined when the server did not live that long. */
  settledFds: number | undefined;
  /** Each a description of a server that ended without being told to. */
  crashes: string[];
  /** 5xx answers, fuzzed or normal. */
  fives: number;
  /** Normal admissions (kube-apiserver's stand-in) that did not get their correct 200. */
  normalLost: number;
  /** False when the phase hit its time limit before its count. */
  completed: boolean;
  notes: string[];
  /** Phase-specific bounds that broke, each a sentence. */
  broken: string[];
  /** The slow-client phases: normal admissions' p99 before the attack and during it. */
  tail?: { quiet: Tail; attack: Tail };
}

/** Descriptors a server at rest may gain over a phase without counting as a leak: watcher handles, a log write. */
export const SETTLE_SLACK = 8;

export class Session {
  readonly sampler: Sampler;
  readonly started = performance.now();

  private constructor(
    readonly server: ServeProcess,
    readonly target: Target,
    readonly baselineFds: number,
  ) {
    this.sampler = new Sampler(server.pid).start();
  }

  static async open(spec: ServeSpec): Promise<Session> {
    const { server, target } = await ServeProcess.start(spec);
    // Let the readiness probe's connection close before counting what the server holds at rest.
    await sleep(300);
    const at = await new Sampler(server.pid).sample();
    return new Session(server, target, at?.fds ?? 0);
  }

  /** Waits, up to 10 s, for the descriptors to come back to where they started. */
  async settle(): Promise<number | undefined> {
    let last: number | undefined;
    for (let i = 0; i < 40 && this.server.alive; i += 1) {
      last = (await this.sampler.sample())?.fds;
      if (last !== undefined && last <= this.baselineFds + SETTLE_SLACK) break;
      await sleep(250);
    }
    return last;
  }

  /** Settles, stops the server (unless a phase already did) and gathers what every phase reports. */
  async close(
    name: string,
    counts: Pick<
      PhaseResult,
      'tried' | 'failed' | 'lost' | 'fives' | 'normalLost' | 'completed' | 'notes' | 'broken' | 'tail'
    >,
  ): Promise<PhaseResult> {
    const settledFds = this.server.alive ? await this.settle() : undefined;
    await this.sampler.sample();
    const samples = this.sampler.stop();
    const exit: ExitInfo = this.server.alive ? await this.server.stop() : await this.server.exited;
    const notes = [...counts.notes];
    const crashes: string[] = [];
    const crash = this.server.crash;
    if (crash !== undefined) {
      crashes.push(
        `serve exited on its own (code ${String(crash.code)}, signal ${String(crash.signal)}): ${crash.stderr.trim().slice(-400)}`,
      );
    } else if (exit.code !== 0) {
      notes.push(
        `serve exited with ${String(exit.code ?? exit.signal)} when stopped (1 = the drain had to cut connections)`,
      );
    }
    const problems = await logProblems(this.server.logFile);
    if (problems.counts.size > 0) {
      notes.push(`server error/fatal log lines: ${[...problems.counts].map(([msg, n]) => `${msg} x${n}`).join(', ')}`);
      notes.push(...problems.firsts.slice(0, 3).map((line) => `  ${line}`));
    }
    return {
      name,
      ...counts,
      notes,
      seconds: (performance.now() - this.started) / 1000,
      samples,
      hwmMiB: this.sampler.hwmMiB,
      baselineFds: this.baselineFds,
      settledFds,
      crashes,
    };
  }
}
