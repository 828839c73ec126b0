/**
 * The page loop alone, with the page function injected: what it asks for, what it returns, and how it takes an
 * expired continue token. test/e2e/paged-watch.e2e.test.ts reads 1,200 objects from a real kube-apiserver.
 */
import type { KubernetesListObject, V1ConfigMap } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { listAllPages, type ListPage } from '../../src/kube-client/paged-list.js';

const item = (name: string): V1ConfigMap => ({
  metadata: { name, resourceVersion: '1' },
  data: { big: 'x'.repeat(100) },
});

/** Pages of `names`, `limit` at a time, at resourceVersion `version`; records every request. */
function pages(names: string[], version = '42') {
  const asked: ListPage[] = [];
  const list = (page: ListPage): Promise<KubernetesListObject<V1ConfigMap>> => {
    asked.push(page);
    const start = page._continue === undefined ? 0 : Number(page._continue.replace('from-', ''));
    const end = start + page.limit;
    return Promise.resolve({
      apiVersion: 'v1',
      kind: 'ConfigMapList',
      metadata: { resourceVersion: version, ...(end < names.length ? { _continue: `from-${end}` } : {}) },
      items: names.slice(start, end).map(item),
    });
  };
  return { asked, list };
}

const gone = () => Object.assign(new Error('Gone: the continue token has expired'), { code: 410 });

describe('listAllPages', () => {
  it('asks for pages of pageSize with each continue token until the last, and returns every item once', async () => {
    const names = Array.from({ length: 12 }, (_, i) => `cm-${i}`);
    const { asked, list } = pages(names);
    const result = await listAllPages(list, { pageSize: 5 });
    expect(asked).toEqual([{ limit: 5 }, { limit: 5, _continue: 'from-5' }, { limit: 5, _continue: 'from-10' }]);
    expect(result.items.map((i) => i.metadata?.name)).toEqual(names);
    expect(result.metadata).toEqual({ resourceVersion: '42' });
    expect(result.kind).toBe('ConfigMapList');
  });

  it('asks for 500 a page by default and stops at an empty continue token', async () => {
    const { asked, list } = pages(['only']);
    const result = await listAllPages(list);
    expect(asked).toEqual([{ limit: 500 }]);
    expect(result.items).toHaveLength(1);
  });

  it('applies the transform to every item of every page', async () => {
    const { list } = pages(['a', 'b', 'c']);
    const result = await listAllPages(list, {
      pageSize: 2,
      transform: (cm) => ({ metadata: { name: cm.metadata?.name?.toUpperCase() } }),
    });
    expect(result.items).toEqual([
      { metadata: { name: 'A' } },
      { metadata: { name: 'B' } },
      { metadata: { name: 'C' } },
    ]);
  });

  it('starts again from the first page when a continue token has expired, keeping nothing of the first try', async () => {
    const names = ['a', 'b', 'c', 'd'];
    const { asked, list } = pages(names);
    let expired = 1;
    const result = await listAllPages(
      (page) => {
        if (page._continue !== undefined && expired > 0) {
          expired -= 1;
          asked.push(page);
          return Promise.reject(gone());
        }
        return list(page);
      },
      { pageSize: 2 },
    );
    expect(asked).toEqual([
      { limit: 2 },
      { limit: 2, _continue: 'from-2' },
      { limit: 2 },
      { limit: 2, _continue: 'from-2' },
    ]);
    expect(result.items.map((i) => i.metadata?.name)).toEqual(names);
  });

  it('gives up after three restarts in a row, with the 410', async () => {
    const { list } = pages(['a', 'b', 'c']);
    let firstPages = 0;
    const failing = (page: ListPage) => {
      if (page._continue === undefined) firstPages += 1;
      return page._continue === undefined ? list(page) : Promise.reject(gone());
    };
    await expect(listAllPages(failing, { pageSize: 2 })).rejects.toMatchObject({ code: 410 });
    expect(firstPages).toBe(4);
  });

  it('passes on an error of the first page, 410 included, and any error of a later page', async () => {
    await expect(listAllPages(() => Promise.reject(gone()))).rejects.toMatchObject({ code: 410 });
    const { list } = pages(['a', 'b', 'c']);
    const refused = (page: ListPage) =>
      page._continue === undefined ? list(page) : Promise.reject(Object.assign(new Error('Forbidden'), { code: 403 }));
    await expect(listAllPages(refused, { pageSize: 2 })).rejects.toMatchObject({ code: 403 });
  });
});
