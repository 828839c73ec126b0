import { describe, expect, it } from 'vitest';
import { STARTUP_ERRORS } from '../../src/errors/index.js';
import { parseConfigMapManifest } from '../../src/config/configmap-manifest.js';
import { InjectionConfigStore, parseRuntimeConfig } from '../../src/config/injection-config.js';
import { parsePolicy, parseRuntimeList, runtimesFromAnnotations } from '../../src/sandbox/runtime-selection.js';
import { ManualClock } from '../support/manual-clock.js';

describe('parseRuntimeConfig', () => {
  it('names the line and column of a JSON syntax error', () => {
    const parsed = parseRuntimeConfig('{\n  "volume": [\n    {"name": "a",}\n  ]\n}');
    expect(parsed.ok).toBe(false);
    expect(parsed.ok ? '' : parsed.message).toMatch(/^invalid JSON at line 3 column \d+/);
  });

  it.each([
    ['{"csiSidecar": {}}', 'field /csiSidecar must be array'],
    ['{"labels": {"a": 1}}', 'field /labels/a must be string'],
    ['{"csiSidecar": [{"name": "s", "command": "run"}]}', 'field /csiSidecar/0/command must be array'],
    ['{"mainContainer": {"Env": [{"name": 7}]}}', 'field /mainContainer/env/0/name must be string'],
    ['[]', 'field (top level) must be object'],
    ['"x"', 'field (top level) must be object'],
  ])('names the field of a type error, where Go would fail too, in %s', (text, message) => {
    const parsed = parseRuntimeConfig(text);
    expect(parsed.ok ? '' : parsed.message).toBe(message);
  });

  it('passes unknown Container and Volume fields through and freezes the result', () => {
    const parsed = parseRuntimeConfig('{"csiSidecar": [{"name": "s", "securityContext": {"privileged": true}}]}');
    if (!parsed.ok) throw new Error(parsed.message);
    expect(parsed.config.csiSidecar?.[0]).toEqual({ name: 's', securityContext: { privileged: true } });
    expect(Object.isFrozen(parsed.config.csiSidecar?.[0]?.securityContext)).toBe(true);
  });

  it('freezes every object but leaves arrays extensible, so a patch holding them stringifies on the fast path', () => {
    const parsed = parseRuntimeConfig('{"csiSidecar": [{"name": "s", "args": ["a"], "env": [{"name": "E"}]}]}');
    if (!parsed.ok) throw new Error(parsed.message);
    const sidecar = parsed.config.csiSidecar?.[0];
    expect([sidecar, sidecar?.env?.[0]].map((value) => Object.isFrozen(value))).toEqual([true, true]);
    expect([parsed.config.csiSidecar, sidecar?.args, sidecar?.env].map((list) => Object.isFrozen(list))).toEqual([
      false,
      false,
      false,
    ]);
  });
});

describe("parseRuntimeConfig reads a key as the Sandbox controller's Go code does", () => {
  const read = (text: string) => {
    const parsed = parseRuntimeConfig(text);
    if (!parsed.ok) throw new Error(parsed.message);
    return parsed;
  };

  it('takes null anywhere for absent, as encoding/json marshals empty Go fields', () => {
    const { config } = read(
      '{"mainContainer":{"name":"","env":null,"lifecycle":null},"csiSidecar":[{"name":"s","args":null,"securityContext":{"privileged":null,"runAsUser":0}}],' +
        '"volume":null,"labels":null,"annotations":null,"initContainers":null,"containers":null}',
    );
    expect(config).toEqual({
      mainContainer: { name: '' },
      csiSidecar: [{ name: 's', securityContext: { runAsUser: 0 } }],
    });
  });

  it('matches field names case-insensitively, an exact match first, and the later of two duplicates wins', () => {
    const { config } = read(
      '{"CsiSidecar":[{"NAME":"s","Image":"i:1","volumemounts":[{"Name":"v","MountPath":"/v"}]}],"Volume":[{"name":"v","EmptyDir":{}}]}',
    );
    expect(config).toEqual({
      csiSidecar: [{ name: 's', image: 'i:1', volumeMounts: [{ name: 'v', mountPath: '/v' }] }],
      volume: [{ name: 'v', emptyDir: {} }],
    });
    expect(
      read('{"labels":{"a":"1"},"Labels":{"b":"2"},"volume":[{"name":"x"}],"VOLUME":[{"name":"y"}]}').config,
    ).toEqual({
      labels: { a: '1', b: '2' },
      volume: [{ name: 'y' }],
    });
  });

  it('drops fields Go does not know and reports where they were', () => {
    const parsed = read(
      '{"csiSidecar":[{"name":"s","imagePullSecret":"x"}],"sidecars":[],"mainContainer":{"lifecycle":{"postStart":{"exec":{"command":["a"],"shell":true}}}}}',
    );
    expect(parsed.config).toEqual({
      csiSidecar: [{ name: 's' }],
      mainContainer: { name: '', lifecycle: { postStart: { exec: { command: ['a'] } } } },
    });
    expect(parsed.unknownFields).toEqual([
      '/csiSidecar/0/imagePullSecret',
      '/sidecars',
      '/mainContainer/lifecycle/postStart/exec/shell',
    ]);
  });

  it('gives fields Go always writes their zero value, and a null list element its zero value', () => {
    expect(read('{"volume":[{"emptyDir":{}}],"csiSidecar":[null],"labels":{"a":null}}').config).toEqual({
      volume: [{ name: '', emptyDir: {} }],
      csiSidecar: [{ name: '' }],
      labels: { a: '' },
    });
    expect(read('null').config).toEqual({});
  });

  it('keeps a "__proto__" map key as a key, never as the prototype', () => {
    const { config } = read('{"annotations":{"__proto__":"x"}}');
    expect(Object.keys(config.annotations ?? {})).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(config.annotations)).toBe(Object.prototype);
  });
});

describe('InjectionConfigStore', () => {
  it('reports unknown fields per key, for one log line per config version', () => {
    const report = new InjectionConfigStore().update({ csi: '{"csiSidecar":[{"name":"s","x":1}]}', gpu: '{}' });
    expect(report.unknownFields).toEqual([{ key: 'csi', fields: ['/csiSidecar/0/x'] }]);
  });

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
    const clock = new ManualClock();
    const store = new InjectionConfigStore('ns/cm', clock);
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
    expect(store.loadedAt).toBe(clock.now());
  });
});

describe('parseConfigMapManifest', () => {
  it('reads YAML and JSON manifests', () => {
    const yaml = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n  csi: |\n    {"volume": []}\n';
    expect(parseConfigMapManifest(yaml, 'cm.yaml')).toEqual({ csi: '{"volume": []}\n' });
    expect(parseConfigMapManifest('{"apiVersion":"v1","kind":"ConfigMap","data":{"a":"{}"}}', 'cm.json')).toEqual({
      a: '{}',
    });
  });

  it('keeps a key named __proto__ as a key (a valid ConfigMap key), not as the prototype', () => {
    const data = parseConfigMapManifest(
      'apiVersion: v1\nkind: ConfigMap\ndata:\n  __proto__: "{}"\n  csi: "{}"\n',
      'cm',
    );
    expect(Object.keys(data)).toEqual(['__proto__', 'csi']);
    const snapshot = new InjectionConfigStore();
    snapshot.update(data);
    const state = snapshot.snapshot();
    expect(state.present && state.valid.has('__proto__')).toBe(true);
  });

  it.each([
    [
      'apiVersion: v1\nkind: Secret\ndata: {}\n',
      /cm: not a ConfigMap \(apiVersion v1, kind ConfigMap\); found kind "Secret"/,
    ],
    ['apiVersion: v1\nkind: ConfigMap\ndata:\n  a: 1\n', /cm: field data\.a must be a string, found number/],
    ['a: [1,\n', /cm: not valid YAML or JSON/],
    ['', /cm: expected one ConfigMap manifest, found 0 documents/],
    ['kind: ConfigMap\n---\nkind: ConfigMap\n', /found 2 documents/],
  ])('refuses %j with a message naming the file', (text, message) => {
    expect(() => parseConfigMapManifest(text, 'cm')).toThrow(STARTUP_ERRORS.configMapManifestInvalid.Error);
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
    const pod = {
      metadata: {
        annotations: { 'agents.kruise.io/runtimes': 'csi', 'agents.kruise.io/env-vars-injection-policy': 'Auto' },
      },
      spec: { containers: [] },
    };
    expect(runtimesFromAnnotations(pod)).toEqual({
      ok: true,
      runtimes: ['csi'],
      policy: 'Auto',
      source: 'annotation agents.kruise.io/runtimes',
      policySource: 'annotation agents.kruise.io/env-vars-injection-policy',
    });
  });
});
