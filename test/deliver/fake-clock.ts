import type { Clock } from '../../src/util/clock.js';

/** A Clock the test moves itself: timers run only when `advance` passes them, or when `fire` runs them all. */
export class FakeClock implements Clock {
  private wall = 1_000_000;
  private mono = 5_000;
  timers: { at: number; run: () => void; cancelled: boolean }[] = [];

  now = (): number => this.wall;
  monotonic = (): number => this.mono;

  setTimer = (run: () => void, ms: number): (() => void) => {
    const timer = { at: this.mono + ms, run, cancelled: false };
    this.timers.push(timer);
    return () => {
      timer.cancelled = true;
    };
  };

  /** Waits not yet run, in ms from now. */
  pending(): number[] {
    return this.timers.filter((t) => !t.cancelled).map((t) => t.at - this.mono);
  }

  /** Moves both clocks on by `ms`, running each timer that falls due, in order. */
  advance(ms: number): void {
    const end = this.mono + ms;
    for (;;) {
      const due = this.timers.filter((t) => !t.cancelled && t.at <= end).sort((a, b) => a.at - b.at)[0];
      if (due === undefined) break;
      this.jump(due.at - this.mono);
      due.cancelled = true;
      due.run();
    }
    this.jump(end - this.mono);
    this.timers = this.timers.filter((t) => !t.cancelled);
  }

  /** Moves time on without running any timer: a process that was frozen and has not run yet. */
  jump(ms: number): void {
    this.mono += ms;
    this.wall += ms;
  }

  /** Runs every timer set so far, moving time to the latest of them. */
  fire(): void {
    const latest = Math.max(this.mono, ...this.timers.filter((t) => !t.cancelled).map((t) => t.at));
    this.advance(latest - this.mono);
  }
}
