/**
 * The built `sandbox-injector serve` as a child process, one per phase so each phase's memory and file
 * descriptors are its own: how it is started (flags read from its own --help, so the harness runs before
 * and after the transport limits land), how it is watched (/proc), and how it is stopped.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, createReadStream, openSync } from 'node:fs';
import { mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { statusKiB } from '../harness/proc.js';
import { CLI } from '../harness/repo.js';
import { freePort, serveArgs } from '../harness/serve.js';
import { exchange, type Target } from './http.js';

export interface HelpFlag {
  flag: string;
  description: string;
  defaultValue: string | undefined;
}

export async function readServeHelp(): Promise<Map<string, HelpFlag>> {
  const { stdout } = await promisify(execFile)(process.execPath, [CLI, 'serve', '--help']);
  const flags = new Map<string, HelpFlag>();
  for (const line of stdout.split('\n')) {
    const match = /^\s+--([a-z0-9-]+)\s+(.*?)(?:\s+\[default: ([^\]]*)\])?\s*$/.exec(line);
    if (match?.[1] === undefined) continue;
    flags.set(match[1], { flag: match[1], description: match[2] ?? '', defaultValue: match[3] });
  }
  return flags;
}

/**
 * Short time limits, for whichever of them this build has: the slow-client phases then see the server close
 * bad connections within seconds rather than minutes. Names are matched loosely because the flags are being
 * written while this harness is. A flag whose default is a duration (`30s`) takes one; an older build's flag
 * counted in the unit of its suffix; a limit with neither is left alone.
 */
export function shortTimeLimits(help: Map<string, HelpFlag>): { values: Map<string, string>; notes: string[] } {
  const wanted: [RegExp, number][] = [
    [/header/, 5],
    [/request|body/, 10],
    [/keep-?alive|idle/, 5],
    [/connection|socket/, 10],
  ];
  const values = new Map<string, string>();
  const notes: string[] = [];
  for (const { flag, defaultValue } of help.values()) {
    if (!/timeout/.test(flag) || /shutdown/.test(flag)) continue;
    const seconds = wanted.find(([pattern]) => pattern.test(flag))?.[1];
    const value =
      seconds === undefined
        ? undefined
        : /^\d+(\.\d+)?(ms|s|m|h)/.test(defaultValue ?? '')
          ? `${seconds}s`
          : /-seconds$/.test(flag)
            ? String(seconds)
            : /-ms$/.test(flag)
              ? String(seconds * 1000)
              : undefined;
    if (value === undefined) {
      notes.push(`--${flag} left at its default (no rule for it)`);
      continue;
    }
    values.set(flag, value);
  }
  return { values, notes };
}

/** The server's connection-cap flag and its default, if it has one: the cap bounds the descriptors a phase may see. */
export function connectionCap(help: Map<string, HelpFlag>): { flag: string; value: number } | undefined {
  for (const { flag, defaultValue } of help.values()) {
    if (!/connection/.test(flag) || !/max|cap|limit/.test(flag)) continue;
    const value = Number(defaultValue);
    if (Number.isInteger(value) && value > 0) return { flag, value };
  }
  return undefined;
}

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** How every phase's server is run: the Deployment's limits, the harness's short time limits, its heap flags. */
export interface ServeSetup {
  args: string[];
  logLevel: string;
  env: Record<string, string>;
}

export interface ServeSpec extends ServeSetup {
  dir: string;
  /** Where to read the CA the server's certificate chains to, once the server has made or loaded it. */
  caFile: string;
}

export class ServeProcess {
  private static readonly running = new Set<ServeProcess>();
  readonly exited: Promise<ExitInfo>;
  /** Set when the process ended before stop() was called: a crash, whatever the exit code. */
  crash: (ExitInfo & { stderr: string }) | undefined;
  exitInfo: ExitInfo | undefined;
  private stopping = false;
  private stderrTail = '';

  private constructor(
    readonly child: ChildProcess,
    readonly pid: number,
    readonly port: number,
    readonly logFile: string,
  ) {
    child.stderr?.on('data', (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-8_192);
    });
    ServeProcess.running.add(this);
    this.exited = new Promise((resolve) =>
      child.on('exit', (code, signal) => {
        ServeProcess.running.delete(this);
        this.exitInfo = { code, signal };
        if (!this.stopping) this.crash = { code, signal, stderr: this.stderrTail };
        resolve({ code, signal });
      }),
    );
  }

  /** Whatever a phase left running when it failed: never outlives the harness. */
  static killAll(): void {
    for (const server of ServeProcess.running) server.signal('SIGKILL');
  }

  get alive(): boolean {
    return this.exitInfo === undefined;
  }

  static async start(spec: ServeSpec): Promise<{ server: ServeProcess; target: Target }> {
    await mkdir(spec.dir, { recursive: true });
    const port = await freePort();
    const logFile = join(spec.dir, `serve-${port}.log`);
    // Log lines go to a file, not a pipe: a harness slow to drain a pipe would grow the server's memory.
    const out = openSync(logFile, 'w');
    const child = spawn(process.execPath, serveArgs(port, '--log-level', spec.logLevel, ...spec.args), {
      cwd: spec.dir,
      env: { ...process.env, ...spec.env },
      stdio: ['ignore', out, 'pipe'],
    });
    closeSync(out);
    if (child.pid === undefined) throw new Error('serve did not start');
    const server = new ServeProcess(child, child.pid, port, logFile);
    const target = await server.waitReady(spec.caFile);
    return { server, target };
  }

  private async waitReady(caFile: string): Promise<Target> {
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      if (!this.alive)
        throw new Error(`serve exited (${JSON.stringify(this.exitInfo)}) before ready: ${this.stderrTail}`);
      const ca = await readFile(caFile).catch(() => undefined);
      if (ca !== undefined) {
        const target = { port: this.port, ca };
        const outcome = await exchange(target, false, { method: 'GET', path: '/readyz', headers: {} }, 2_000);
        if (outcome.kind === 'answer' && outcome.status === 200) return target;
      }
      await sleep(100);
    }
    throw new Error(`serve on port ${this.port} not ready after 30 s`);
  }

  signal(signal: NodeJS.Signals): void {
    this.stopping = true;
    this.child.kill(signal);
  }

  /** SIGTERM, then SIGKILL if the drain outlives its own timeout: a phase never waits forever. */
  async stop(graceMs = 40_000): Promise<ExitInfo> {
    if (!this.alive) return this.exitInfo ?? { code: null, signal: null };
    this.signal('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }
}

export interface Sample {
  /** Seconds since the phase started. */
  t: number;
  rssMiB: number;
  fds: number;
}

/** RSS and open descriptors of a process, read from /proc at a fixed interval; VmHWM catches what falls between samples. */
export class Sampler {
  readonly samples: Sample[] = [];
  hwmMiB = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly started = performance.now();

  constructor(private readonly pid: number) {}

  start(intervalMs = 500): this {
    void this.sample();
    this.timer = setInterval(() => void this.sample(), intervalMs);
    return this;
  }

  async sample(): Promise<Sample | undefined> {
    try {
      const [status, fds] = await Promise.all([
        readFile(`/proc/${this.pid}/status`, 'utf8'),
        readdir(`/proc/${this.pid}/fd`),
      ]);
      // An exiting process has no memory lines left: its sample would read as zero.
      if (!status.includes('VmRSS:')) return undefined;
      this.hwmMiB = Math.max(this.hwmMiB, statusKiB(status, 'VmHWM') / 1024);
      const rssMiB = statusKiB(status, 'VmRSS') / 1024;
      const sample = { t: (performance.now() - this.started) / 1000, rssMiB, fds: fds.length };
      this.samples.push(sample);
      return sample;
    } catch {
      // The process has exited; the crash is reported from its exit, not from here.
      return undefined;
    }
  }

  stop(): Sample[] {
    clearInterval(this.timer);
    return this.samples;
  }
}

/** Error and fatal lines of a server's log, by message, with the first of each: what a 5xx or a crash said. */
export async function logProblems(logFile: string): Promise<{ counts: Map<string, number>; firsts: string[] }> {
  const counts = new Map<string, number>();
  const firsts: string[] = [];
  const lines = createInterface({ input: createReadStream(logFile, 'utf8'), crlfDelay: Infinity });
  for await (const line of lines) {
    const level = /"level":(\d+)/.exec(line)?.[1];
    if (level === undefined || Number(level) < 50) continue;
    const msg = /"msg":"((?:[^"\\]|\\.)*)"/.exec(line)?.[1] ?? '(no msg)';
    const seen = counts.get(msg) ?? 0;
    if (seen === 0) firsts.push(line.slice(0, 600));
    counts.set(msg, seen + 1);
  }
  return { counts, firsts };
}
