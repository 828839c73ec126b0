/**
 * The test clock: a Clock whose time moves only when the test moves it, and whose timers run only when that
 * passes them. Wall and monotonic time move together, unless the test moves one alone (a wall clock stepped
 * or standing still, a process frozen and not yet run). Setting a timer is an event a test can wait for.
 *
 * With `fastForward`, each timer runs as soon as the code that set it yields, time jumping to it: for tests
 * of what happens after waits, not of when.
 */
import type { Clock } from '../../src/time/clock.js';

interface Timer {
  at: number;
  run: () => void;
  cancelled: boolean;
}

export class ManualClock implements Clock {
  private wall = 1_000_000;
  private mono = 5_000;
  private timers: Timer[] = [];
  private timerWaiters: (() => void)[] = [];
  /** Every wait asked for, in ms, in order (cancelled or not). */
  readonly waits: number[] = [];

  constructor(private readonly options: { fastForward?: boolean } = {}) {}

  now = (): number => this.wall;
  monotonic = (): number => this.mono;

  setTimer = (run: () => void, ms: number): (() => void) => {
    const timer = { at: this.mono + ms, run, cancelled: false };
    this.timers.push(timer);
    this.waits.push(ms);
    for (const wake of this.timerWaiters.splice(0)) wake();
    if (this.options.fastForward === true) queueMicrotask(() => this.advance(Math.max(0, timer.at - this.mono)));
    return () => {
      timer.cancelled = true;
    };
  };

  /** Resolves at the next setTimer call: the code under test has come to a wait. */
  nextTimer(): Promise<void> {
    return new Promise((resolve) => this.timerWaiters.push(resolve));
  }

  /** Waits not yet run, in ms from now, in the order they were set. */
  pending(): number[] {
    return this.timers.filter((t) => !t.cancelled).map((t) => t.at - this.mono);
  }

  /** Moves both clocks on by `ms`, running each timer that falls due, in order. */
  advance(ms: number): void {
    this.runUntil(this.mono + ms, true);
  }

  /** Moves the monotonic clock on by `ms`, running the timers that fall due, while the wall clock stands still. */
  advanceMonotonic(ms: number): void {
    this.runUntil(this.mono + ms, false);
  }

  /** Steps the wall clock alone, forward or back, as NTP or an operator may: no timer runs. */
  stepWall(ms: number): void {
    this.wall += ms;
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

  private runUntil(end: number, moveWall: boolean): void {
    for (;;) {
      const due = this.timers.filter((t) => !t.cancelled && t.at <= end).sort((a, b) => a.at - b.at)[0];
      if (due === undefined) break;
      this.moveTo(due.at, moveWall);
      due.cancelled = true;
      due.run();
    }
    this.moveTo(end, moveWall);
    this.timers = this.timers.filter((t) => !t.cancelled);
  }

  private moveTo(mono: number, moveWall: boolean): void {
    if (moveWall) this.wall += mono - this.mono;
    this.mono = mono;
  }
}
