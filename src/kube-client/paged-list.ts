/**
 * A LIST in pages: kube-apiserver answers `limit` items at a time with a `continue` token for the rest, so
 * neither side holds the whole collection as one response. Every page of one list is read at the same
 * resourceVersion (the token carries it), so the pages together are one consistent snapshot, and the watch
 * that follows starts from that version.
 */
import type { KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';

/** What one page asks for: kube-apiserver's `limit` and `continue` parameters, as client-node names them. */
export interface ListPage {
  limit: number;
  _continue?: string;
}

export type ListPageFunction<T extends KubernetesObject> = (page: ListPage) => Promise<KubernetesListObject<T>>;

/** client-go's pager uses 500 too: big enough that a few thousand objects take a handful of requests. */
export const DEFAULT_PAGE_SIZE = 500;

/**
 * A continue token expires with etcd's compaction (every 5 minutes by default), answered by 410 Gone; the list
 * then starts again from its first page. Past this many restarts in a row the error goes to the caller, whose
 * backoff takes over.
 */
const MAX_RESTARTS = 3;

export interface PagedListOptions<T extends KubernetesObject> {
  pageSize?: number;
  /** Applied to each item as its page arrives, so a page's whole objects can be collected before the next. */
  transform?: (object: T) => T;
}

/** Every page of a list, as one list object with the snapshot's resourceVersion. */
export async function listAllPages<T extends KubernetesObject>(
  listPage: ListPageFunction<T>,
  options: PagedListOptions<T> = {},
): Promise<KubernetesListObject<T>> {
  const limit = options.pageSize ?? DEFAULT_PAGE_SIZE;
  const transform = options.transform;
  let items: T[] = [];
  let token: string | undefined;
  let restarts = 0;
  for (;;) {
    let page: KubernetesListObject<T>;
    try {
      page = await listPage(token === undefined ? { limit } : { limit, _continue: token });
    } catch (error) {
      if (token === undefined || !isGone(error) || restarts >= MAX_RESTARTS) throw error;
      restarts += 1;
      items = [];
      token = undefined;
      continue;
    }
    for (const item of page.items) items.push(transform === undefined ? item : transform(item));
    const next = page.metadata?._continue;
    if (next === undefined || next === '') {
      return {
        apiVersion: page.apiVersion,
        kind: page.kind,
        metadata: { resourceVersion: page.metadata?.resourceVersion },
        items,
      };
    }
    token = next;
  }
}

/** client-node's ApiException carries the status as `code`; a watch's error as `statusCode`. */
export function isGone(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, statusCode } = error as { code?: unknown; statusCode?: unknown };
  return code === 410 || statusCode === 410;
}
