// The link checker on a repository made up here: it passes what resolves and fails what does not, the broken
// anchor first, since that is the mistake a renamed heading makes.
import { describe, expect, it } from 'vitest';
import { anchorOf, brokenPointers, markdownHeadings, type Repo } from './link-check.js';

/** A repository of these files (paths from the root); folders are implied by the paths. */
function repoOf(files: Record<string, string>): Repo {
  const dirs = new Set(
    Object.keys(files).flatMap((path) =>
      path
        .split('/')
        .slice(0, -1)
        .map((_, i, parts) => parts.slice(0, i + 1).join('/')),
    ),
  );
  return {
    kind: (path) => (path in files ? 'file' : dirs.has(path) ? 'dir' : undefined),
    text: (path) => files[path] ?? '',
  };
}

const GUIDE = '# Guide\n\n## Install it\n\n## Flags and environment\n\n### Memory\n\n## Memory\n';
// Written in two pieces, so that the repository's own link test does not read these on purpose broken pointers.
const md = (name: string): string => `${name}.md`;

function problems(files: Record<string, string>, scanned = Object.keys(files)): string[] {
  return brokenPointers(repoOf(files), scanned).map((b) => `${b.file}:${b.line}: ${b.problem}`);
}

describe('brokenPointers', () => {
  it('passes a link to a heading that exists', () => {
    expect(
      problems({ [md('docs/guide')]: GUIDE, [md('README')]: `See [install](${md('docs/guide')}#install-it).\n` }),
    ).toEqual([]);
  });

  it('fails a link whose anchor names no heading, with the file and line', () => {
    const readme = `# Title\n\nSee [install](${md('docs/guide')}#installing-it).\n`;
    expect(problems({ [md('docs/guide')]: GUIDE, [md('README')]: readme })).toEqual([
      `${md('README')}:3: ${md('docs/guide')} has no heading whose anchor is #installing-it`,
    ]);
  });

  it('fails an anchor into the same file that is not there, and passes one that is', () => {
    const page = `${GUIDE}\n[ok](#flags-and-environment) [broken](#flags)\n`;
    expect(problems({ [md('docs/guide')]: page })).toEqual([
      `${md('docs/guide')}:11: ${md('docs/guide')} has no heading whose anchor is #flags`,
    ]);
  });

  it('fails a link to a file that does not exist, relative to the linking file', () => {
    expect(problems({ [md('docs/a')]: `[b](${md('b')}) [up](../${md('README')})`, [md('README')]: '# R\n' })).toEqual([
      `${md('docs/a')}:1: ${md('docs/b')} does not exist`,
    ]);
  });

  it('reads no link in code, and follows none to a URL', () => {
    const page = `\`[x](${md('nowhere')})\`\n\n\`\`\`sh\n[x](${md('nowhere')}#y)\n\`\`\`\n[site](https://example.com/x.md#y)\n`;
    expect(problems({ [md('docs/a')]: page })).toEqual([]);
  });

  it('gives a repeated heading the anchor GitHub gives it', () => {
    expect(markdownHeadings(GUIDE).map((h) => h.anchor)).toEqual([
      'guide',
      'install-it',
      'flags-and-environment',
      'memory',
      'memory-1',
    ]);
    expect(anchorOf("deliver-env's memory: `NODE_OPTIONS` (and more)")).toBe(
      'deliver-envs-memory-node_options-and-more',
    );
  });

  it('checks a section named in a comment, from the folder up, over a line break, by the start of a heading', () => {
    const code = [
      `// The limits (${md('docs/guide')}, "Flags and`,
      `// environment"), the sums (${md('docs/guide')}#memory-1), and (${md('docs/guide')} ("Install"))`,
      `/* the gone one: ${md('docs/guide')}, "Memory sums" */`,
    ].join('\n');
    expect(problems({ [md('docs/guide')]: GUIDE, 'src/a/b.ts': code }, ['src/a/b.ts'])).toEqual([
      `src/a/b.ts:3: ${md('docs/guide')} has no heading "Memory sums"`,
    ]);
  });

  it("checks a runbook URL into the repository's home by its path and anchor", () => {
    const home = 'https://github.com/example/sandbox-injector/blob/main/';
    const rule = `runbook_url: ${home}${md('docs/guide')}#memory\nrunbook_url: ${home}${md('docs/guide')}#gone\n`;
    expect(problems({ [md('docs/guide')]: GUIDE, 'manifests/rule.yaml': rule }, ['manifests/rule.yaml'])).toEqual([
      `manifests/rule.yaml:2: ${md('docs/guide')} has no heading whose anchor is #gone`,
    ]);
  });
});
