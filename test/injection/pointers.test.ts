import { describe, expect, it } from 'vitest';
import { JsonPointers, pointerOf, token } from '../../src/injection/pointers.js';

describe('pointers', () => {
  it('are RFC 6901 pointers, keys escaped, indexes as decimal', () => {
    const pointers = new JsonPointers();
    expect(pointers.of([])).toBe('');
    expect(pointers.of(['spec', 'containers', 3, 'command'])).toBe('/spec/containers/3/command');
    expect(pointers.of(['metadata', 'annotations', 'agents.kruise.io/a~b'])).toBe(
      '/metadata/annotations/agents.kruise.io~1a~0b',
    );
    expect(pointers.of(['', 0])).toBe('//0');
    expect(token(5000)).toBe('5000');
    expect(pointers.child('/spec/volumes', 12)).toBe('/spec/volumes/12');
    expect(pointers.child('/spec/volumes', '12')).toBe('/spec/volumes/12');
    expect(pointers.child('/metadata/labels', 'a/b')).toBe('/metadata/labels/a~1b');
    expect(pointers.under('/spec/containers/2', '/livenessProbe/exec/command')).toBe(
      '/spec/containers/2/livenessProbe/exec/command',
    );
  });

  it('are made alike with no cache', () => {
    expect(pointerOf([])).toBe('');
    expect(pointerOf(['spec', 'containers', 3, 'command'])).toBe('/spec/containers/3/command');
    expect(pointerOf(['metadata', 'annotations', 'a/b~c'])).toBe('/metadata/annotations/a~1b~0c');
    expect(pointerOf(['', 0])).toBe('//0');
  });

  it('give the same pointer when asked again, from what they kept', () => {
    const pointers = new JsonPointers();
    const first = pointers.of(['spec', 'initContainers', 7, 'volumeMounts', 1]);
    expect(pointers.kept).toBe(5);
    expect(pointers.of(['spec', 'initContainers', 7, 'volumeMounts', 1])).toBe(first);
    expect(pointers.kept).toBe(5);
    // A base and a pointer below it are kept apart from a parent and a token of the same text.
    expect(pointers.under('/a', '/b')).toBe('/a/b');
    expect(pointers.child('/a', 'b')).toBe('/a/b');
    expect(pointers.child('/a', '/b')).toBe('/a/~1b');
  });

  it('keep a bounded number, and stay right past the bound', () => {
    const pointers = new JsonPointers();
    // A long pointer is made but never kept.
    const long = 'x'.repeat(200);
    expect(pointers.child('/long', long)).toBe(`/long/${long}`);
    expect(pointers.kept).toBe(0);
    expect(pointers.child('/short', 'x')).toBe('/short/x');
    expect(pointers.kept).toBe(1);

    for (let i = 0; i < 6000; i += 1) {
      expect(pointers.child('/bound', `key-${i}`)).toBe(`/bound/key-${i}`);
    }
    expect(pointers.kept).toBe(4096);
  });

  it('are kept by their owner only: a new cache starts empty', () => {
    const first = new JsonPointers();
    first.of(['spec', 'containers', 0]);
    expect(new JsonPointers().kept).toBe(0);
  });
});
