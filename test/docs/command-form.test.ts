/**
 * The README and docs/ run the command one way, the way that works in a checkout right after `npm ci`:
 * `npx sandbox-injector ...` (npm ci builds the package; npx runs its bin). Their shell examples never say
 * `node dist/cli/main.js` or a bare `sandbox-injector`, which is on no PATH in a checkout.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DOCS_DIR } from './markdown-table.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const FILES = [
  `${ROOT}README.md`,
  ...readdirSync(DOCS_DIR)
    .filter((name) => name.endsWith('.md'))
    .map((name) => `${DOCS_DIR}${name}`),
];

/** The command lines of the sh and console blocks: a console block's lines after `$ `, every line of an sh block. */
function shellLines(text: string): string[] {
  const lines: string[] = [];
  for (const [, kind, block = ''] of text.matchAll(/^```(sh|console)\n([\s\S]*?)^```$/gm)) {
    for (const line of block.split('\n')) {
      if (kind === 'console' && !line.startsWith('$ ')) continue;
      lines.push(line.replace(/^\$ /, '').replace(/#.*$/, '').trim());
    }
  }
  return lines;
}

describe('the command in README.md and docs/', () => {
  it.each(FILES.map((path) => [path.slice(ROOT.length), path]))('%s runs it as npx sandbox-injector', (_name, path) => {
    const wrong = shellLines(readFileSync(path, 'utf8')).filter((line) =>
      /(^|[;&|]\s*)(node\s+\S*dist\/cli\/main\.js|sandbox-injector\s)/.test(line),
    );
    expect(wrong).toEqual([]);
  });

  it('finds the examples it checks', () => {
    const all = FILES.flatMap((path) => shellLines(readFileSync(path, 'utf8')));
    expect(all.filter((line) => line.startsWith('npx sandbox-injector ')).length).toBeGreaterThan(5);
  });
});
