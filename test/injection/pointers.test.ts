import { describe, expect, it } from 'vitest';
import { childPointer, keptPointers, pointerOf, pointerUnder, token } from '../../src/injection/pointers.js';

describe('pointers', () => {
  it('are RFC 6901 pointers, keys escaped, indexes as decimal', () => {
    expect(pointerOf([])).toBe('');
    expect(pointerOf(['spec', 'containers', 3, 'command'])).toBe('/spec/containers/3/command');
    expect(pointerOf(['metadata', 'annotations', 'agents.kruise.io/a~b'])).toBe(
      '/metadata/annotations/agents.kruise.io~1a~0b',
    );
    expect(pointerOf(['', 0])).toBe('//0');
    expect(token(5000)).toBe('5000');
    expect(childPointer('/spec/volumes', 12)).toBe('/spec/volumes/12');
    expect(childPointer('/spec/volumes', '12')).toBe('/spec/volumes/12');
    expect(childPointer('/metadata/labels', 'a/b')).toBe('/metadata/labels/a~1b');
    expect(pointerUnder('/spec/containers/2', '/livenessProbe/exec/command')).toBe(
      '/spec/containers/2/livenessProbe/exec/command',
    );
  });

  it('give the same pointer when asked again, from what they kept', () => {
    const first = pointerOf(['spec', 'initContainers', 7, 'volumeMounts', 1]);
    expect(pointerOf(['spec', 'initContainers', 7, 'volumeMounts', 1])).toBe(first);
    // A base and a pointer below it are kept apart from a parent and a token of the same text.
    expect(pointerUnder('/a', '/b')).toBe('/a/b');
    expect(childPointer('/a', 'b')).toBe('/a/b');
    expect(childPointer('/a', '/b')).toBe('/a/~1b');
  });

  it('keep a bounded number, and stay right past the bound', () => {
    // A long pointer is made but never kept.
    const before = keptPointers();
    const long = 'x'.repeat(200);
    expect(childPointer('/long', long)).toBe(`/long/${long}`);
    expect(keptPointers()).toBe(before);
    expect(childPointer('/short', 'x')).toBe('/short/x');
    expect(keptPointers()).toBe(before + 1);

    for (let i = 0; i < 6000; i += 1) {
      expect(childPointer('/bound', `key-${i}`)).toBe(`/bound/key-${i}`);
    }
    expect(keptPointers()).toBe(4096);
  });
});
