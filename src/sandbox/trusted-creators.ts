/**
 * Who may create pods that name a Sandbox as their controller owner (--trusted-creators), matched exactly
 * against the review's userInfo. Without this list, anyone allowed to create pods could write that
 * ownerReference and get the Sandbox's runtimes, which can be privileged sidecars.
 *
 * The grammar lives here alone: serve's options (src/cli/serve/options.ts) read the list through
 * `readTrustedCreators` and keep what it gives.
 */
export interface TrustedCreators {
  readonly users: ReadonlySet<string>;
  readonly groups: ReadonlySet<string>;
}

const GROUP_PREFIX = 'group:';
// Lets a user name that itself starts with "group:" be listed.
const USER_PREFIX = 'user:';

export type TrustedCreatorsReading = { ok: true; creators: TrustedCreators } | { ok: false; problem: string };

/**
 * `NAME` and `user:NAME` are user names, `group:NAME` a group; entries are comma-separated and trimmed. An empty
 * entry, or a prefix without a name, is refused: a stray comma must not pass for a deliberate list.
 */
export function readTrustedCreators(list: string): TrustedCreatorsReading {
  const users = new Set<string>();
  const groups = new Set<string>();
  for (const [index, raw] of list.split(',').entries()) {
    const entry = raw.trim();
    const prefix = entry.startsWith(GROUP_PREFIX) ? GROUP_PREFIX : entry.startsWith(USER_PREFIX) ? USER_PREFIX : '';
    const name = entry.slice(prefix.length).trim();
    if (name === '') return { ok: false, problem: emptyEntry(list, index + 1, prefix) };
    (prefix === GROUP_PREFIX ? groups : users).add(name);
  }
  return { ok: true, creators: { users, groups } };
}

function emptyEntry(list: string, position: number, prefix: string): string {
  const what = prefix === '' ? 'is empty' : `has "${prefix}" and no name after it`;
  return `entry ${position} of ${JSON.stringify(list)} ${what}: give NAME, user:NAME or group:NAME, separated by commas`;
}

/**
 * userInfo is read as untyped data: the review schema does not check it. A review without a user name or
 * groups matches nothing, so a hand-made client that leaves userInfo out is not trusted.
 */
export function isTrustedCreator(trusted: TrustedCreators, userInfo: unknown): boolean {
  const info = typeof userInfo === 'object' && userInfo !== null ? (userInfo as Record<string, unknown>) : {};
  if (typeof info.username === 'string' && trusted.users.has(info.username)) return true;
  return (
    Array.isArray(info.groups) && info.groups.some((group) => typeof group === 'string' && trusted.groups.has(group))
  );
}
