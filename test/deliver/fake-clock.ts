/** Timers the test fires itself: backoff waits are read, never waited for. */
export class FakeClock {
  now = 1_000_000;
  timers: { at: number; run: () => void; cancelled: boolean }[] = [];
  setTimer = (run: () => void, ms: number): (() => void) => {
    const timer = { at: this.now + ms, run, cancelled: false };
    this.timers.push(timer);
    return () => {
      timer.cancelled = true;
    };
  };
  pending(): number[] {
    return this.timers.filter((t) => !t.cancelled).map((t) => t.at - this.now);
  }
  fire(): void {
    const due = this.timers.filter((t) => !t.cancelled);
    this.timers = [];
    for (const timer of due) {
      this.now = Math.max(this.now, timer.at);
      timer.run();
    }
  }
}
