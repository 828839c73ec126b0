/** Counts by reason, keeping the first few examples of each, for the report's detail lines. */
export class Tally {
  readonly counts = new Map<string, number>();
  readonly examples = new Map<string, string[]>();
  total = 0;

  constructor(private readonly keep = 3) {}

  add(key: string, example?: string): void {
    this.total += 1;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    if (example === undefined) return;
    const list = this.examples.get(key) ?? [];
    if (list.length < this.keep) list.push(example);
    this.examples.set(key, list);
  }

  merge(other: { counts: Map<string, number> | [string, number][] }): void {
    for (const [key, n] of other.counts) {
      this.total += n;
      this.counts.set(key, (this.counts.get(key) ?? 0) + n);
    }
  }

  /** `reason x3, other x1`, most frequent first. */
  summary(limit = 10): string {
    const sorted = [...this.counts].sort((a, b) => b[1] - a[1]);
    const shown = sorted.slice(0, limit).map(([key, n]) => `${key} x${n}`);
    if (sorted.length > limit) shown.push(`${sorted.length - limit} more`);
    return shown.length === 0 ? 'none' : shown.join(', ');
  }

  /** Examples of the most frequent reasons only: a report is read, not searched. */
  exampleLines(indent = '    ', reasons = 5): string[] {
    const top = [...this.counts].sort((a, b) => b[1] - a[1]).slice(0, reasons);
    return top.flatMap(([key]) => (this.examples.get(key) ?? []).map((line) => `${indent}${key}: ${line}`));
  }
}
