/**
 * Every pointer from one text of the repository to another resolves: what `test/docs/links.test.ts` holds for
 * the docs, the READMEs, the chart, the manifests and the code's comments.
 *
 * A pointer is any of
 *
 * - a markdown link or image, `[text](target)` or `[text](target#anchor)`, outside code, whose target is not a
 *   URL: resolved against the linking file's folder;
 * - a path to a markdown file written in text, `docs/install.md`, `docs/install.md#memory`, or with a section
 *   named in quotes, `docs/install.md, "Memory"` or `docs/install.md ("Memory")`: resolved against the file's
 *   folder, then each folder above it up to the root, as a reader would look for it. A quoted section resolves
 *   when a heading of the file starts with it (a reference may shorten a long heading), case aside;
 * - a link into this repository's placeholder home, `https://github.com/example/sandbox-injector/blob/main/PATH`
 *   (the alerts' runbook URLs): PATH from the root.
 *
 * An anchor resolves when the target file has a heading whose GitHub anchor it is. Pure: the repository is
 * passed in, so the checker's own tests can show it failing.
 */

export interface Repo {
  /** `file`, `dir`, or undefined when nothing is at the path (relative to the root, `/`-separated). */
  kind(path: string): 'file' | 'dir' | undefined;
  text(path: string): string;
}

export interface BrokenPointer {
  file: string;
  line: number;
  pointer: string;
  problem: string;
}

const REPO_HOME = 'https://github.com/example/sandbox-injector/blob/main/';

/** Checks the pointers of `files` (paths from the root). */
export function brokenPointers(repo: Repo, files: readonly string[]): BrokenPointer[] {
  const headings = new Map<string, Heading[]>();
  const headingsOf = (path: string): Heading[] => {
    let found = headings.get(path);
    if (found === undefined) {
      found = markdownHeadings(repo.text(path));
      headings.set(path, found);
    }
    return found;
  };
  const broken: BrokenPointer[] = [];
  for (const file of files) {
    const text = repo.text(file);
    const report = (index: number, pointer: string, problem: string): void => {
      broken.push({ file, line: lineAt(text, index), pointer, problem });
    };
    const check = (target: Target, index: number, pointer: string): void => {
      const problem = targetProblem(repo, target, headingsOf);
      if (problem !== undefined) report(index, pointer, problem);
    };
    if (file.endsWith('.md')) {
      for (const link of markdownLinks(text)) {
        const target = linkTarget(file, link.target);
        if (target !== undefined) check(target, link.index, link.target);
      }
    }
    // In markdown a link is checked as a link, its text and target not again as text.
    const prose = file.endsWith('.md')
      ? text.replace(/\[[^\]\n]*\]\([^)\s]*\)/g, (link) => link.replace(/[^\n]/g, ' '))
      : text;
    for (const ref of textReferences(prose)) {
      // In code a bare `name.md` is as often a string of the code as a pointer: only a path or a section counts.
      if (!file.endsWith('.md') && !ref.path.includes('/') && ref.section === undefined && ref.anchor === undefined)
        continue;
      const path = findUpwards(repo, dirname(file), ref.path);
      if (path === undefined) {
        report(ref.index, ref.pointer, `no ${ref.path} from ${dirname(file) || '.'} or a folder above it`);
        continue;
      }
      check({ path, anchor: ref.anchor, section: ref.section }, ref.index, ref.pointer);
    }
    for (const url of homeUrls(text)) check(url.target, url.index, url.pointer);
  }
  return broken;
}

interface Target {
  path: string;
  anchor?: string | undefined;
  section?: string | undefined;
}

function targetProblem(repo: Repo, target: Target, headingsOf: (path: string) => Heading[]): string | undefined {
  const kind = repo.kind(target.path);
  if (kind === undefined) return `${target.path} does not exist`;
  if (target.anchor === undefined && target.section === undefined) return undefined;
  if (kind !== 'file' || !target.path.endsWith('.md')) return `${target.path} is not a markdown file`;
  const headings = headingsOf(target.path);
  if (target.anchor !== undefined && !headings.some((h) => h.anchor === target.anchor))
    return `${target.path} has no heading whose anchor is #${target.anchor}`;
  const section = target.section?.toLowerCase();
  if (section !== undefined && !headings.some((h) => h.text.toLowerCase().startsWith(section)))
    return `${target.path} has no heading "${target.section ?? ''}"`;
  return undefined;
}

export interface Heading {
  text: string;
  anchor: string;
}

/** The ATX headings outside fenced code, with GitHub's anchors (a repeated one gets -1, -2, ...). */
export function markdownHeadings(text: string): Heading[] {
  const seen = new Map<string, number>();
  const headings: Heading[] = [];
  for (const line of withoutFences(text).split('\n')) {
    const match = /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(line);
    if (match === null) continue;
    const heading = match[1] ?? '';
    const base = anchorOf(heading);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    headings.push({ text: heading.replace(/`/g, ''), anchor: count === 0 ? base : `${base}-${count}` });
  }
  return headings;
}

/** GitHub's anchor for a heading: lower case, punctuation but `-` and `_` dropped, each space a `-`. */
export function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

/** Fenced blocks blanked line for line, so what is left keeps its line numbers. */
function withoutFences(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[ \t]*$/gm, (block) => block.replace(/[^\n]/g, ' '));
}

/** Code spans blanked, so a link written as code is not a link. */
function withoutCodeSpans(text: string): string {
  return text.replace(/(`+)[\s\S]*?\1/g, (span) => span.replace(/[^\n]/g, ' '));
}

function markdownLinks(text: string): { target: string; index: number }[] {
  const prose = withoutCodeSpans(withoutFences(text));
  return [...prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((match) => ({
    target: match[1] ?? '',
    index: match.index,
  }));
}

/** A markdown link's target as a path from the root; undefined for a URL (`http:`, `mailto:`, ...). */
function linkTarget(file: string, target: string): Target | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined;
  const hash = target.indexOf('#');
  const path = hash < 0 ? target : target.slice(0, hash);
  const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
  return { path: path === '' ? file : normalize(`${dirname(file)}/${decodeURIComponent(path)}`), anchor };
}

interface TextReference {
  path: string;
  anchor?: string;
  section?: string;
  pointer: string;
  index: number;
}

/** `a/b.md`, `a/b.md#anchor`, `a/b.md, "Section"` and `a/b.md ("Section")` written in text (comments, prose). */
export function textReferences(text: string): TextReference[] {
  const found: TextReference[] = [];
  const pattern =
    /(?<![\w./-])((?:[\w.-]+\/)*[\w.-]+\.md)(?![\w]|\.\w)(?:#([\w-]+)|(?:,\s*|\s*\(\s*)"([^"]{1,120})")?/g;
  for (const match of text.matchAll(pattern)) {
    const [pointer, path = '', anchor, quoted] = match;
    // A quote may run over a comment's line break: ` * ` or `# ` at the start of the next line is not its text.
    const section = quoted?.replace(/\s*\n\s*(?:\*|#|\/\/)?\s*/g, ' ').trim();
    found.push({
      path,
      ...(anchor === undefined ? {} : { anchor }),
      ...(section === undefined ? {} : { section }),
      pointer: pointer.replace(/\s+/g, ' '),
      index: match.index,
    });
  }
  return found;
}

function homeUrls(text: string): { target: Target; pointer: string; index: number }[] {
  const escaped = REPO_HOME.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  return [...text.matchAll(new RegExp(`${escaped}([\\w./-]+)(?:#([\\w-]+))?`, 'g'))].map((match) => ({
    target: { path: match[1] ?? '', anchor: match[2] },
    pointer: match[0],
    index: match.index,
  }));
}

/** `path` from `dir`, then from each folder above it: the first that exists. */
function findUpwards(repo: Repo, dir: string, path: string): string | undefined {
  let from = dir;
  for (;;) {
    const candidate = normalize(from === '' ? path : `${from}/${path}`);
    if (!candidate.startsWith('../') && repo.kind(candidate) !== undefined) return candidate;
    if (from === '') return undefined;
    from = dirname(from);
  }
}

function dirname(path: string): string {
  const slash = path.lastIndexOf('/');
  return slash < 0 ? '' : path.slice(0, slash);
}

/** `a/./b/../c` -> `a/c`; a path that climbs above the root keeps its leading `../`. */
function normalize(path: string): string {
  const parts: string[] = [];
  for (const part of path.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..' && parts.length > 0 && parts[parts.length - 1] !== '..') parts.pop();
    else parts.push(part);
  }
  return parts.join('/');
}

function lineAt(text: string, index: number): number {
  return text.slice(0, index).split('\n').length;
}
