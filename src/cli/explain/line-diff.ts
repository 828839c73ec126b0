/**
 * A unified diff of two texts, line by line (Myers' O(ND) algorithm), with `context` unchanged lines around
 * each change as `diff -u` prints them. Injection changes a few dozen lines of a pod, so D stays small and the
 * kept search frontiers (O(D²) numbers) stay cheap; the common head and tail are cut off before the search.
 */

type Edit = { kind: ' ' | '-' | '+'; line: string };

export function unifiedDiff(before: string, after: string, labels: { from: string; to: string }, context = 3): string {
  const edits = editScript(splitLines(before), splitLines(after));
  const hunks = hunkRanges(edits, context);
  if (hunks.length === 0) return '';
  const out = [`--- ${labels.from}`, `+++ ${labels.to}`];
  const position = linePositions(edits);
  for (const [start, end] of hunks) {
    const slice = edits.slice(start, end);
    const oldCount = slice.filter((edit) => edit.kind !== '+').length;
    const newCount = slice.filter((edit) => edit.kind !== '-').length;
    const [oldAt, newAt] = position[start] ?? [0, 0];
    out.push(`@@ -${range(oldAt, oldCount)} +${range(newAt, newCount)} @@`);
    for (const edit of slice) out.push(`${edit.kind}${edit.line}`);
  }
  return `${out.join('\n')}\n`;
}

function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines;
}

/** `diff -u` numbering: a hunk of no lines names the line before it. */
function range(zeroBasedStart: number, count: number): string {
  const start = count === 0 ? zeroBasedStart : zeroBasedStart + 1;
  return count === 1 ? String(start) : `${start},${count}`;
}

/** For each edit, how many old and new lines come before it. */
function linePositions(edits: readonly Edit[]): [number, number][] {
  const positions: [number, number][] = [];
  let oldLine = 0;
  let newLine = 0;
  for (const edit of edits) {
    positions.push([oldLine, newLine]);
    if (edit.kind !== '+') oldLine += 1;
    if (edit.kind !== '-') newLine += 1;
  }
  return positions;
}

/** [start, end) edit ranges, each change with its context; changes whose contexts touch share a hunk. */
function hunkRanges(edits: readonly Edit[], context: number): [number, number][] {
  const hunks: [number, number][] = [];
  for (const [index, edit] of edits.entries()) {
    if (edit.kind === ' ') continue;
    const start = Math.max(0, index - context);
    const end = Math.min(edits.length, index + context + 1);
    const last = hunks.at(-1);
    if (last !== undefined && start <= last[1]) last[1] = end;
    else hunks.push([start, end]);
  }
  return hunks;
}

function editScript(a: readonly string[], b: readonly string[]): Edit[] {
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head += 1;
  let endA = a.length;
  let endB = b.length;
  while (endA > head && endB > head && a[endA - 1] === b[endB - 1]) {
    endA -= 1;
    endB -= 1;
  }
  const same = (line: string): Edit => ({ kind: ' ', line });
  return [
    ...a.slice(0, head).map(same),
    ...myers(a.slice(head, endA), b.slice(head, endB)),
    ...a.slice(endA).map(same),
  ];
}

/** The shortest edit script from a to b. `frontiers[d]` holds the furthest x on each diagonal k in [-d, d]. */
function myers(a: readonly string[], b: readonly string[]): Edit[] {
  const n = a.length;
  const m = b.length;
  const max = n + m;
  const offset = max + 1;
  const v = new Int32Array(2 * max + 3);
  const frontiers: Int32Array[] = [];
  search: for (let d = 0; d <= max; d += 1) {
    for (let k = -d; k <= d; k += 2) {
      const down = k === -d || (k !== d && (v[offset + k - 1] ?? 0) < (v[offset + k + 1] ?? 0));
      let x = down ? (v[offset + k + 1] ?? 0) : (v[offset + k - 1] ?? 0) + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x += 1;
        y += 1;
      }
      v[offset + k] = x;
      if (x >= n && y >= m) {
        frontiers.push(v.slice(offset - d, offset + d + 1));
        break search;
      }
    }
    frontiers.push(v.slice(offset - d, offset + d + 1));
  }
  return backtrack(a, b, frontiers);
}

function backtrack(a: readonly string[], b: readonly string[], frontiers: readonly Int32Array[]): Edit[] {
  const edits: Edit[] = [];
  let x = a.length;
  let y = b.length;
  for (let d = frontiers.length - 1; d > 0; d -= 1) {
    const previous = frontiers[d - 1] ?? new Int32Array(0);
    const at = (k: number): number => previous[k + d - 1] ?? 0;
    const k = x - y;
    const down = k === -d || (k !== d && at(k - 1) < at(k + 1));
    const previousK = down ? k + 1 : k - 1;
    const previousX = at(previousK);
    const previousY = previousX - previousK;
    while (x > previousX + (down ? 0 : 1) && y > previousY + (down ? 1 : 0)) {
      edits.push({ kind: ' ', line: a[x - 1] ?? '' });
      x -= 1;
      y -= 1;
    }
    if (down) edits.push({ kind: '+', line: b[y - 1] ?? '' });
    else edits.push({ kind: '-', line: a[x - 1] ?? '' });
    x = previousX;
    y = previousY;
  }
  while (x > 0 && y > 0) {
    edits.push({ kind: ' ', line: a[x - 1] ?? '' });
    x -= 1;
    y -= 1;
  }
  return edits.reverse();
}
