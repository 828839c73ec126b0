import { describe, expect, it } from 'vitest';
import { encodePatch, patchText } from '../../src/admission/patch.js';
import type { EditOperation } from '../../src/injection/index.js';
import { deepFreeze } from '../../src/sources/deep-freeze.js';

describe('patchText', () => {
  const tricky = ['plain', 'a "quoted" word', 'back\\slash', 'tab\tnew\nline\u0001', 'é ü 日本', '😀 pair', 'lone \ud800 high', 'lone \udc00 low', ''];

  it.each(tricky.map((s) => [s]))('writes %j as JSON.stringify does', (text) => {
    const operations: EditOperation[] = [
      { op: 'replace', path: `/spec/containers/0/args`, value: ['run', text] },
      { op: 'add', path: `/metadata/annotations/${text}`, value: text },
    ];
    expect(patchText(operations)).toBe(JSON.stringify(operations));
  });

  it('writes arrays that are not all strings, nulls, numbers and objects as JSON.stringify does', () => {
    const operations: EditOperation[] = [
      { op: 'add', path: '/a', value: [1, 'x', null, { y: ['z'] }] },
      { op: 'add', path: '/b', value: null },
      { op: 'add', path: '/c', value: 3 },
      { op: 'replace', path: '/d', value: { e: [true, false] } },
      { op: 'add', path: '/f', value: [] },
    ];
    expect(patchText(operations)).toBe(JSON.stringify(operations));
  });

  it('reuses the text of a frozen config value and still writes it exactly', () => {
    const sidecar = deepFreeze({ name: 'agent', image: 'agent:1', env: [{ name: 'A', value: 'a "b"' }] });
    const operations: EditOperation[] = [
      { op: 'add', path: '/spec/initContainers/1', value: sidecar },
      { op: 'add', path: '/spec/initContainers/2', value: sidecar },
    ];
    expect(patchText(operations)).toBe(JSON.stringify(operations));
    expect(patchText(operations)).toBe(JSON.stringify(operations));
  });

  it('is base64 of that text in encodePatch', () => {
    const operations: EditOperation[] = [{ op: 'add', path: '/x', value: ['ü'] }];
    expect(Buffer.from(encodePatch(operations), 'base64').toString('utf8')).toBe(JSON.stringify(operations));
  });
});
