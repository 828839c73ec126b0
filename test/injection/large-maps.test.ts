import { describe, expect, it } from 'vitest';
import { STATUS_ANNOTATION, type Pod } from '../../src/injection/index.js';
import { CONFIGS, inject, pod } from '../support/builders.js';
import { applyStrict } from '../support/strict-patch.js';
import { watchedMap } from '../support/watched-map.js';

/**
 * A pod may carry tens of thousands of annotations (kube-apiserver allows 256 KiB of them), and the injection
 * adds one or two. These tests count the work done on such a map instead of timing it: a copy or a diff of the
 * map enumerates its keys, and the injection must not do either.
 */

function manyEntries(count: number, extra: Record<string, string> = {}): Record<string, string> {
  const entries: Record<string, string> = { ...extra };
  for (let i = 0; i < count; i++) entries[`example.com/key-${i}`] = `value-${i}`;
  return entries;
}

const main = { name: 'main', image: 'app:1', command: ['run'] };

describe('large label and annotation maps', () => {
  it('adds the status annotation without enumerating (copying or diffing) the annotations', () => {
    const { map, enumerations } = watchedMap(manyEntries(5_000));
    const result = inject(pod([main], {}, { name: 'p', annotations: map }), ['agent-runtime', 'csi'], 'Auto');
    const onAnnotations = result.operations.filter((o) => o.path.startsWith('/metadata/annotations'));
    expect(onAnnotations.map((o) => o.path)).toEqual([
      '/metadata/annotations/agents.kruise.io~1runtime-injection-status',
    ]);
    expect(enumerations()).toBe(0);
  });

  it("adds a generic runtime's labels and annotations without enumerating either map", () => {
    const annotations = watchedMap(manyEntries(5_000));
    const labels = watchedMap(manyEntries(5_000));
    const result = inject(pod([main], {}, { name: 'p', annotations: annotations.map, labels: labels.map }), [
      'traffic-proxy',
    ]);
    expect(result.report.injected).toEqual(['traffic-proxy']);
    expect(annotations.enumerations() + labels.enumerations()).toBe(0);
    expect(result.operations.filter((o) => o.path.startsWith('/metadata/')).map((o) => o.path)).toEqual([
      '/metadata/labels/agents.kruise.io~1traffic',
      '/metadata/annotations/proxy.example.com~1config~0v2',
      '/metadata/annotations/agents.kruise.io~1runtime-injection-status',
    ]);
  });

  it('still gives the whole pod, with the entries added, to whoever asks for it', () => {
    const input: Pod = pod([main], {}, { name: 'p', annotations: manyEntries(1_000), labels: { app: 'a' } });
    const result = inject(input, ['traffic-proxy', 'agent-runtime']);
    const annotations = result.pod.metadata.annotations ?? {};
    expect(Object.keys(annotations)).toHaveLength(1_000 + 2);
    expect(annotations['proxy.example.com/config~v2']).toBe('on');
    expect(annotations[STATUS_ANNOTATION]).toBeDefined();
    expect(result.pod.metadata.labels).toEqual({ app: 'a', 'agents.kruise.io/traffic': 'proxied' });
    expect(input.metadata.annotations?.[STATUS_ANNOTATION]).toBeUndefined();
    expect(applyStrict(input, result.operations)).toEqual(result.pod);
  });

  it('keeps a value the pod already has for a key a runtime would add', () => {
    const input: Pod = pod([main], {}, { name: 'p', annotations: { 'proxy.example.com/config~v2': 'mine' } });
    const result = inject(input, ['traffic-proxy'], 'None', CONFIGS);
    expect(result.pod.metadata.annotations?.['proxy.example.com/config~v2']).toBe('mine');
    expect(result.operations.some((o) => o.path === '/metadata/annotations/proxy.example.com~1config~0v2')).toBe(false);
  });
});
