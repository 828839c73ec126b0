import { readFileSync } from 'node:fs';

export const DOCS_DIR = new URL('../../docs/', import.meta.url).pathname;

/**
 * The rows of the markdown table whose header row starts with `firstHeader`, as arrays of trimmed cells
 * (the header and the `---` row left out). Cells split on `|` not escaped as `\|`.
 */
export function tableRows(file: string, firstHeader: string): string[][] {
  const lines = readFileSync(`${DOCS_DIR}${file}`, 'utf8').split('\n');
  const start = lines.findIndex((line) => cells(line)[0] === firstHeader);
  if (start < 0) throw new Error(`${file}: no table whose first column is "${firstHeader}"`);
  const rows: string[][] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(cells(line));
  }
  return rows;
}

/** A table line's cells, trimmed; `\|` inside a cell does not split it. */
export function cells(line: string): string[] {
  return line
    .trim()
    .replace(/^\||\|$/g, '')
    .split(/(?<!\\)\|/)
    .map((cell) => cell.trim());
}

/** `code` → code. */
export function unquote(cell: string): string {
  return cell.replace(/^`|`$/g, '');
}
