/** kube-apiserver truncates longer warnings; keep each readable and the whole set within its budget. */
export const MAX_WARNING_LENGTH = 120;
export const MAX_WARNINGS_BYTES = 4096;

export function limitWarnings(warnings: readonly string[]): string[] {
  const result: string[] = [];
  let total = 0;
  for (const [index, warning] of warnings.entries()) {
    const line = shorten(oneLine(warning));
    const size = Buffer.byteLength(line);
    const remaining = warnings.length - index - 1;
    // Leave room for the line that says how many were dropped.
    const reserve = remaining > 0 ? 40 : 0;
    if (total + size + reserve > MAX_WARNINGS_BYTES) {
      result.push(`${warnings.length - index} more warnings omitted`);
      break;
    }
    result.push(line);
    total += size;
  }
  return result;
}

/** A warning as one line, whole: what the log and `explain` show. */
export function oneLine(warning: string): string {
  return warning.replace(/[\r\n\t]+/g, ' ').trim();
}

function shorten(line: string): string {
  if (line.length <= MAX_WARNING_LENGTH) return line;
  return `${line.slice(0, MAX_WARNING_LENGTH - 3)}...`;
}
