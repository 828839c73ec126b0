// The JSON log lines a child process writes, gathered across its restarts, and waited for: the processes
// write lines a little after they act, so a test never reads them once and hopes.
import type { ChildProcess } from 'node:child_process';
import { EventEmitter, once } from 'node:events';

export class JsonLog {
  readonly lines: Record<string, unknown>[] = [];
  private readonly appended = new EventEmitter();

  constructor(private readonly name: string) {}

  /** Gathers `proc`'s stdout, a JSON object per line (others kept as `msg`), and its stderr as `stderr`. */
  attach(proc: ChildProcess): void {
    let pending = '';
    proc.stdout?.on('data', (chunk: Buffer) => {
      pending += chunk.toString('utf8');
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        try {
          this.push(JSON.parse(line) as Record<string, unknown>);
        } catch {
          this.push({ msg: line });
        }
      }
    });
    proc.stderr?.on('data', (chunk: Buffer) => this.push({ stderr: chunk.toString('utf8') }));
  }

  /** Waits until at least `count` lines so far match, and returns them. */
  async logged(
    match: (line: Record<string, unknown>) => boolean,
    what: string,
    count = 1,
    timeoutMs = 20_000,
  ): Promise<Record<string, unknown>[]> {
    const signal = AbortSignal.timeout(timeoutMs);
    for (;;) {
      const found = this.lines.filter(match);
      if (found.length >= count) return found;
      try {
        await once(this.appended, 'line', { signal });
      } catch {
        throw new Error(`${this.name}: ${found.length} of ${count} log lines (${what}) within ${timeoutMs} ms`);
      }
    }
  }

  private push(line: Record<string, unknown>): void {
    this.lines.push(line);
    this.appended.emit('line');
  }
}
