import { describe, expect, it } from 'vitest';
import { encodePatch } from '../../src/admission/patch.js';
import type { EditOperation } from '../../src/injection/index.js';

describe('encodePatch', () => {
  it.each(['plain', 'a "quoted" word', 'back\\slash', 'tab\tnew\nline\u0001', 'é ü 日本', '😀 pair', ''])(
    "is base64 of the operations' JSON, UTF-8 encoded (%j)",
    (text) => {
      const operations: EditOperation[] = [
        { op: 'replace', path: '/spec/containers/0/args', value: ['run', text] },
        { op: 'add', path: `/metadata/annotations/${text}`, value: text },
      ];
      const decoded = Buffer.from(encodePatch(operations), 'base64');
      expect(decoded.toString('utf8')).toBe(JSON.stringify(operations));
      expect(JSON.parse(decoded.toString('utf8'))).toEqual(operations);
    },
  );

  it('encodes large patches, and a small one after a large one, whole and alone', () => {
    const patches = ['日'.repeat(40_000), 'x'.repeat(70_000), 'small', '😀'.repeat(30_000), ''].map((text) => [
      { op: 'add' as const, path: '/metadata/annotations/a', value: text },
    ]);
    for (const operations of patches) {
      expect(Buffer.from(encodePatch(operations), 'base64').toString('utf8')).toBe(JSON.stringify(operations));
    }
  });
});
