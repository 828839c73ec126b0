/** What the server, the watchers and the certificate manager log through; a pino logger satisfies it. */
export interface Logger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

/**
 * Caps on what one log line may carry from a request. Every such field (a uid, a pod name, a list of
 * runtimes, a denial message) comes from whoever sent the review, and a log pipeline that is handed a
 * megabyte-long "name" or a list of 100,000 runtimes suffers for it (line limits, indexing, cost), while the
 * reader learns nothing more than from the first few hundred characters. docs/server.md lists the caps.
 */

/** uids, namespaces, pod and runtime names: Kubernetes names are at most 253 characters. */
export const LOG_NAME_MAX = 253;
/** Messages (denials, refusals): enough for every message the server writes itself. */
const LOG_MESSAGE_MAX = 1024;
/** Lists (runtimes, present, skipped): more than any sensible pod asks for. */
const LOG_LIST_MAX = 16;

/** `value` when short enough, else its first `max` characters and how many were cut. */
export function cutString(value: string, max: number): string {
  if (value.length <= max) return value;
  return `${value.slice(0, max)}...(${value.length - max} more characters)`;
}

/** The first `LOG_LIST_MAX` items, each cut; a last item says how many more there were. */
export function cutList<T>(items: readonly T[], cutItem: (item: T) => T, more: (count: number) => T): T[] {
  const kept = items.slice(0, LOG_LIST_MAX).map(cutItem);
  if (items.length > LOG_LIST_MAX) kept.push(more(items.length - LOG_LIST_MAX));
  return kept;
}

/** A list of names, cut as above. */
export function cutNames(names: readonly string[]): string[] {
  return cutList(
    names,
    (name) => cutString(name, LOG_NAME_MAX),
    (count) => `...(${count} more)`,
  );
}

export function cutName(value: string | undefined): string | undefined {
  return value === undefined ? undefined : cutString(value, LOG_NAME_MAX);
}

export function cutMessage(value: string): string {
  return cutString(value, LOG_MESSAGE_MAX);
}
