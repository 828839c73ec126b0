import { describe, expect, it } from 'vitest';
import { ConfigMapManifestError, parseConfigMapManifest } from '../../src/sources/configmap-manifest.js';
import { InjectionConfigStore, parseRuntimeConfig } from '../../src/sources/injection-config.js';
import { parsePolicy, parseRuntimeList, runtimesFromAnnotations } from '../../src/sources/pod-annotations.js';

describe('parseRuntimeConfig', () => {
  it('names the line and column of a JSON syntax error', () => {
    const parsed = parseRuntimeConfig('{\n  "volume": [\n    {"name": "a",}\n  ]\n}');
    expect(parsed.ok).toBe(false);
    expect(parsed.ok ? '' : parsed.message).toMatch(/^invalid JSON at line 3 column \d+/);
  });

  it.each([
    ['{"csiSidecar": {}}', 'field /csiSidecar must be array'],
    ['{"volume": [{"emptyDir": {}}]}', "field /volume/0 must have required property 'name'"],
    ['{"labels": {"a": 1}}', 'field /labels/a must be string'],
    ['{"mainContainer": {"volumeMounts": [{"name": "v"}]}}', "field /mainContainer/volumeMounts/0 must have required property 'mountPath'"],
    ['[]', 'field (top level) must be object'],
  ])('names the field of a shape error in %s', (text, message) => {
    const parsed = parseRuntimeConfig(text);
    expect(parsed.ok ? '' : parsed.message).toBe(message);
  });

  it('passes unknown Container and Volume fields through and freezes the result', () => {
    const parsed = parseRuntimeConfig('{"csiSidecar": [{"name": "s", "securityContext": {"privileged": true}}]}');
    if (!parsed.ok) throw new Error(parsed.message);
    expect(parsed.config.csiSidecar?.[0]).toEqual({ name: 's', securityContext: { privileged: true } });
    expect(Object.isFrozen(parsed.config.csiSidecar?.[0]?.securityContext)).toBe(true);
  });
});

describe('InjectionConfigStore', () => {
  it('is absent until loaded, and after the ConfigMap is deleted', () => {
    const store = new InjectionConfigStore();
    expect(store.snapshot().present).toBe(false);
    expect(store.loadedAt).toBeUndefined();
    store.update({ csi: '{}' });
    expect(store.snapshot().present).toBe(true);
    store.update(undefined);
    expect(store.snapshot().present).toBe(false);
    expect(store.loadedAt).toBeTypeOf('number');
  });

  it('keeps the last valid version of a key that turns bad, and reports it', () => {
    const store = new InjectionConfigStore('ns/cm', () => 42);
    store.update({ csi: '{"volume": [{"name": "v1"}]}' });
    const report = store.update({ csi: '{"volume": [', gpu: 'nope' });
    expect(report.invalidKeys.map((k) => [k.key, k.fellBack])).toEqual([
      ['csi', true],
      ['gpu', false],
    ]);
    const snapshot = store.snapshot();
    if (!snapshot.present) throw new Error('absent');
    expect(snapshot.valid.get('csi')).toEqual({ volume: [{ name: 'v1' }] });
    expect(snapshot.entries.get('csi')?.error).toMatch(/invalid JSON/);
    expect(snapshot.entries.get('gpu')?.config).toBeUndefined();
    expect(store.loadedAt).toBe(42);
  });
});

describe('parseConfigMapManifest', () => {
  it('reads YAML and JSON manifests', () => {
    const yaml = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n  csi: |\n    {"volume": []}\n';
    expect(parseConfigMapManifest(yaml, 'cm.yaml')).toEqual({ csi: '{"volume": []}\n' });
    expect(parseConfigMapManifest('{"apiVersion":"v1","kind":"ConfigMap","data":{"a":"{}"}}', 'cm.json')).toEqual({ a: '{}' });
  });

  it.each([
    ['apiVersion: v1\nkind: Secret\ndata: {}\n', /cm: not a ConfigMap \(apiVersion v1, kind ConfigMap\); found kind "Secret"/],
    ['apiVersion: v1\nkind: ConfigMap\ndata:\n  a: 1\n', /cm: field data\.a must be a string, found number/],
    ['a: [1,\n', /cm: not valid YAML or JSON/],
    ['', /cm: expected one ConfigMap manifest, found 0 documents/],
    ['kind: ConfigMap\n---\nkind: ConfigMap\n', /found 2 documents/],
  ])('refuses %j with a message naming the file', (text, message) => {
    expect(() => parseConfigMapManifest(text, 'cm')).toThrow(ConfigMapManifestError);
    expect(() => parseConfigMapManifest(text, 'cm')).toThrow(message);
  });
});

describe('pod annotations', () => {
  it('parses runtime lists ignoring spaces, empty entries and duplicates', () => {
    expect(parseRuntimeList(' csi , agent-runtime,,csi ')).toEqual(['csi', 'agent-runtime']);
  });

  it('defaults the policy to None and refuses other values', () => {
    expect(parsePolicy(undefined, 'f')).toEqual({ ok: true, policy: 'None' });
    expect(parsePolicy('Auto', 'f')).toEqual({ ok: true, policy: 'Auto' });
    expect(parsePolicy('auto', 'f')).toMatchObject({ ok: false });
  });

  it('reads runtimes and policy from the pod', () => {
    const pod = { metadata: { annotations: { 'agents.kruise.io/runtimes': 'csi', 'agents.kruise.io/env-vars-injection-policy': 'Auto' } }, spec: { containers: [] } };
    expect(runtimesFromAnnotations(pod)).toEqual({ ok: true, runtimes: ['csi'], policy: 'Auto', source: 'pod annotations' });
  });
});
