import { describe, expect, it } from 'vitest';
import { injectRuntimes, STATUS_ANNOTATION, type Container, type Pod } from '../../src/injection/index.js';
import { AGENT_CONFIG, CONFIGS, CSI_CONFIG, inject, pod } from '../support/builders.js';
import * as say from '../../src/injection/auto-warnings.js';

const W = ['/bin/bash', '/var/sandbox/run_with_envs.sh'];
const main = (extra: Partial<Container> = {}): Container => ({ name: 'main', image: 'app:1', ...extra });
const names = (list: readonly Container[] | undefined): string[] => (list ?? []).map((c) => c.name);
/** The pod without the status annotation: a skip leaves the pod as it was, apart from that record. */
const withoutStatus = (p: Pod): Pod => {
  const { annotations = {}, ...metadata } = p.metadata;
  const rest = Object.fromEntries(Object.entries(annotations).filter(([key]) => key !== STATUS_ANNOTATION));
  return { ...p, metadata: Object.keys(rest).length === 0 ? metadata : { ...metadata, annotations: rest } };
};
const statusOf = (p: Pod): Record<string, unknown> =>
  JSON.parse(p.metadata.annotations?.[STATUS_ANNOTATION] ?? 'null') as Record<string, unknown>;
const first = (p: Pod): Container => {
  const c = p.spec.containers[0];
  if (c === undefined) throw new Error('no main container');
  return c;
};

describe('order', () => {
  it('agent-runtime first, then csi, then the others in the order asked', () => {
    const { pod: out, report } = inject(pod([main()]), ['traffic-proxy', 'csi', 'agent-runtime']);
    expect(report.injected).toEqual(['agent-runtime', 'csi', 'traffic-proxy']);
    expect(names(out.spec.initContainers)).toEqual(['agent-runtime', 'csi-sidecar', 'proxy-init']);
    expect(first(out).env?.map((e) => e.name)).toEqual(['ENVD_DIR', 'RUNTIME', 'CSI_MOUNT_ROOT', 'LOG_LEVEL']);
  });

  it('one runtime skipped for a conflict does not affect another', () => {
    const { pod: out, report } = inject(pod([main()], { initContainers: [{ name: 'agent-runtime' }] }), [
      'agent-runtime',
      'csi',
    ]);
    expect(report.injected).toEqual(['csi']);
    expect(report.skipped.map((s) => [s.runtime, s.reason])).toEqual([['agent-runtime', 'container-name-conflict']]);
    expect(names(out.spec.initContainers)).toEqual(['agent-runtime', 'csi-sidecar']);
  });

  it('a runtime asked twice is injected once', () => {
    const { pod: out } = inject(pod([main()]), ['csi', 'csi']);
    expect(names(out.spec.initContainers)).toEqual(['csi-sidecar']);
  });
});

describe('agent-runtime', () => {
  it('container name conflict with a regular container skips the whole runtime', () => {
    const input = pod([main(), { name: 'agent-runtime', image: 'x' }]);
    const { pod: out, report } = inject(input, ['agent-runtime']);
    expect(withoutStatus(out)).toEqual(input);
    expect(report.warnings[0]).toMatch(/agent-runtime: skipped, container name conflict: "agent-runtime"/);
  });

  it('postStart conflict skips the whole runtime, sidecars, env, mounts and volumes included', () => {
    const input = pod([main({ lifecycle: { postStart: { httpGet: { port: 80 } } } })]);
    const { pod: out, report } = inject(input, ['agent-runtime']);
    expect(withoutStatus(out)).toEqual(input);
    expect(report.skipped[0]?.reason).toBe('poststart-conflict');
    expect(report.warnings).toHaveLength(1);
  });

  describe('with --poststart-conflict=merge', () => {
    const merge = (input: Pod) => inject(input, ['agent-runtime'], 'None', CONFIGS, undefined, 'merge');

    it('chains two exec hooks: the config command, "--", then the container\'s own', () => {
      const { pod: out, report } = merge(
        pod([main({ lifecycle: { postStart: { exec: { command: ['sh', '-c', 'hi'] } } } })]),
      );
      expect(first(out).lifecycle?.postStart).toEqual({
        exec: { command: ['bash', '/mnt/envd/envd-run.sh', '--', 'sh', '-c', 'hi'] },
      });
      expect(report.injected).toEqual(['agent-runtime']);
      expect(report.warnings).toEqual([]);
    });

    it("keeps a hook that is not exec, drops the config's with a warning, and injects the rest", () => {
      const own = { httpGet: { port: 80 } };
      const { pod: out, report } = merge(pod([main({ lifecycle: { postStart: own } })]));
      expect(first(out).lifecycle?.postStart).toEqual(own);
      expect(report.injected).toEqual(['agent-runtime']);
      expect(names(out.spec.initContainers)).toEqual(['agent-runtime']);
      expect(first(out).env?.map((e) => e.name)).toEqual(['ENVD_DIR', 'RUNTIME']);
      expect(report.warnings.join()).toMatch(/agent-runtime: postStart not added, "main" has its own/);
    });

    it('changes nothing when the container has no hook of its own', () => {
      const { pod: out } = merge(pod([main()]));
      expect(first(out).lifecycle?.postStart).toEqual(AGENT_CONFIG.mainContainer?.lifecycle?.postStart);
    });
  });

  it('postStart: {} is not a valid handler and counts as absent', () => {
    const { pod: out, report } = inject(pod([main({ lifecycle: { postStart: {} } })]), ['agent-runtime']);
    expect(report.injected).toEqual(['agent-runtime']);
    expect(first(out).lifecycle?.postStart).toEqual(AGENT_CONFIG.mainContainer?.lifecycle?.postStart);
  });

  it("sets the config postStart and keeps the main container's other hooks", () => {
    const preStop = { exec: { command: ['drain'] } };
    const { pod: out } = inject(pod([main({ lifecycle: { preStop } })]), ['agent-runtime']);
    expect(first(out).lifecycle).toEqual({ preStop, postStart: AGENT_CONFIG.mainContainer?.lifecycle?.postStart });
  });

  it("a config without postStart leaves the main container's own hook", () => {
    const own = { exec: { command: ['mine'] } };
    const configs = new Map(CONFIGS).set('agent-runtime', {
      ...AGENT_CONFIG,
      mainContainer: { name: '', env: [{ name: 'A', value: '1' }] },
    });
    const { pod: out, report } = inject(
      pod([main({ lifecycle: { postStart: own } })]),
      ['agent-runtime'],
      'None',
      configs,
    );
    expect(report.injected).toEqual(['agent-runtime']);
    expect(first(out).lifecycle?.postStart).toEqual(own);
  });

  it('appends env as is, without de-duplication', () => {
    const { pod: out } = inject(pod([main({ env: [{ name: 'ENVD_DIR', value: 'mine' }] })]), ['agent-runtime']);
    expect(first(out).env).toEqual([
      { name: 'ENVD_DIR', value: 'mine' },
      { name: 'ENVD_DIR', value: '/mnt/envd' },
      { name: 'RUNTIME', value: 'agent-runtime' },
    ]);
  });

  it('leaves out a mount whose mountPath the main container already uses, with a warning', () => {
    const own = { name: 'mine', mountPath: '/mnt/envd' };
    const { pod: out, report } = inject(pod([main({ volumeMounts: [own] })]), ['agent-runtime']);
    expect(first(out).volumeMounts).toEqual([own]);
    expect(report.injected).toEqual(['agent-runtime']);
    expect(report.warnings.join()).toMatch(/mount "envd-volume" left out.*\/mnt\/envd/);
  });

  it('never overwrites an existing volume', () => {
    const mine = { name: 'envd-volume', hostPath: { path: '/x' } };
    const { pod: out } = inject(pod([main()], { volumes: [mine] }), ['agent-runtime']);
    expect(out.spec.volumes).toEqual([mine]);
  });

  it('appends sidecars after existing init containers, in config order', () => {
    const { pod: out } = inject(pod([main()], { initContainers: [{ name: 'setup' }] }), ['agent-runtime']);
    expect(names(out.spec.initContainers)).toEqual(['setup', 'agent-runtime']);
  });

  it('skips when the pod has no containers instead of failing', () => {
    const input = pod([]);
    const { pod: out, report } = inject(input, ['agent-runtime']);
    expect(withoutStatus(out)).toEqual(input);
    expect(report.skipped[0]?.reason).toBe('no-main-container');
  });
});

describe('csi', () => {
  it('container name conflict skips the whole runtime', () => {
    const input = pod([main()], { initContainers: [{ name: 'csi-sidecar' }] });
    const { pod: out, report } = inject(input, ['csi']);
    expect(withoutStatus(out)).toEqual(input);
    expect(report.skipped[0]).toMatchObject({ runtime: 'csi', reason: 'container-name-conflict' });
  });

  it('ignores postStart in the csi config, even when the main container has one', () => {
    const own = { exec: { command: ['mine'] } };
    const { pod: out, report } = inject(pod([main({ lifecycle: { postStart: own } })]), ['csi']);
    expect(report.injected).toEqual(['csi']);
    expect(first(out).lifecycle).toEqual({ postStart: own });
    const { pod: bare } = inject(pod([main()]), ['csi']);
    expect(first(bare).lifecycle).toBeUndefined();
  });

  it('adds only env names the main container does not have (the existing value is kept)', () => {
    const { pod: out } = inject(pod([main({ env: [{ name: 'LOG_LEVEL', value: 'debug' }] })]), ['csi']);
    expect(first(out).env).toEqual([
      { name: 'LOG_LEVEL', value: 'debug' },
      { name: 'CSI_MOUNT_ROOT', value: '/mnt/csi' },
    ]);
  });

  it('adds only mount names the main container does not have, with the mountPath guard', () => {
    const byName = inject(pod([main({ volumeMounts: [{ name: 'csi-volume', mountPath: '/data' }] })]), ['csi']);
    expect(first(byName.pod).volumeMounts).toEqual([{ name: 'csi-volume', mountPath: '/data' }]);
    const byPath = inject(pod([main({ volumeMounts: [{ name: 'other', mountPath: '/mnt/csi' }] })]), ['csi']);
    expect(first(byPath.pod).volumeMounts).toEqual([{ name: 'other', mountPath: '/mnt/csi' }]);
    expect(byPath.report.warnings.join()).toMatch(/csi: mount "csi-volume" left out/);
  });

  it('adds config volumes whose names the pod lacks', () => {
    const mine = { name: 'csi-volume', hostPath: { path: '/var/csi' } };
    const { pod: out } = inject(pod([main()], { volumes: [mine] }), ['csi']);
    expect(out.spec.volumes).toEqual([mine, CSI_CONFIG.volume?.[1]]);
  });
});

describe('generic runtimes', () => {
  it('skips the whole runtime on a container name conflict, with a warning', () => {
    const input = pod([main(), { name: 'traffic-proxy' }]);
    const { pod: out, report } = inject(input, ['traffic-proxy']);
    expect(withoutStatus(out)).toEqual(input);
    expect(report.warnings[0]).toMatch(/traffic-proxy: skipped, container name conflict/);
  });

  it('skips the whole runtime on a volume name conflict', () => {
    const input = pod([main()], { volumes: [{ name: 'proxy-certs' }] });
    const { pod: out, report } = inject(input, ['traffic-proxy']);
    expect(withoutStatus(out)).toEqual(input);
    expect(report.skipped[0]?.reason).toBe('volume-name-conflict');
  });

  it('adds labels and annotations the pod lacks (the pod wins) and appends containers and volumes', () => {
    const input = pod([main()], {}, { labels: { 'agents.kruise.io/traffic': 'mine' } });
    const { pod: out } = inject(input, ['traffic-proxy']);
    expect(out.metadata.labels).toEqual({ 'agents.kruise.io/traffic': 'mine' });
    expect(out.metadata.annotations?.['proxy.example.com/config~v2']).toBe('on');
    expect(names(out.spec.initContainers)).toEqual(['proxy-init']);
    expect(names(out.spec.containers)).toEqual(['main', 'traffic-proxy']);
    expect(out.spec.volumes).toEqual([{ name: 'proxy-certs', emptyDir: {} }]);
  });
});

describe('runtimes already present (the Sandbox controller injected them)', () => {
  const sidecar = (name: string, image: string): Container => ({ name, image, restartPolicy: 'Always' });

  it('a runtime whose containers are all there with the same name and image is present: no change, no warning', () => {
    const input = pod([main()], {
      initContainers: [sidecar('agent-runtime', 'agent-runtime:1'), sidecar('csi-sidecar', 'csi:1')],
    });
    const { pod: out, report } = inject(input, ['agent-runtime', 'csi']);
    expect(report).toMatchObject({ injected: [], present: ['agent-runtime', 'csi'], skipped: [], warnings: [] });
    expect(withoutStatus(out)).toEqual(input);
    expect(statusOf(out)).toEqual({ injected: [], present: ['agent-runtime', 'csi'], skipped: [], wrapped: [] });
  });

  it('a generic runtime is present when its init containers and containers are both in their lists', () => {
    const input = pod([main(), { name: 'traffic-proxy', image: 'proxy:2', command: ['proxy'] }], {
      initContainers: [{ name: 'proxy-init', image: 'proxy-init:1' }],
    });
    expect(inject(input, ['traffic-proxy']).report.present).toEqual(['traffic-proxy']);
    const inWrongList = pod([main()], {
      initContainers: [
        { name: 'proxy-init', image: 'proxy-init:1' },
        { name: 'traffic-proxy', image: 'proxy:2' },
      ],
    });
    expect(inject(inWrongList, ['traffic-proxy']).report.skipped[0]?.reason).toBe('container-name-conflict');
  });

  it('the same name with another image is still a name conflict', () => {
    const { report } = inject(pod([main()], { initContainers: [sidecar('agent-runtime', 'agent-runtime:0')] }), [
      'agent-runtime',
    ]);
    expect(report.present).toEqual([]);
    expect(report.skipped[0]).toMatchObject({ runtime: 'agent-runtime', reason: 'container-name-conflict' });
  });

  it('only some of the containers is still a name conflict', () => {
    const configs = new Map(CONFIGS).set('agent-runtime', {
      ...AGENT_CONFIG,
      csiSidecar: [...(AGENT_CONFIG.csiSidecar ?? []), sidecar('envd-helper', 'helper:1')],
    });
    const input = pod([main()], { initContainers: [sidecar('agent-runtime', 'agent-runtime:1')] });
    const { report } = inject(input, ['agent-runtime'], 'None', configs);
    expect(report.skipped[0]).toMatchObject({ reason: 'container-name-conflict' });
  });

  it('a config that adds no container is never present: it is injected', () => {
    const configs = new Map(CONFIGS).set('volumes-only', { volume: [{ name: 'scratch', emptyDir: {} }] });
    const { report } = inject(pod([main()]), ['volumes-only'], 'None', configs);
    expect(report.injected).toEqual(['volumes-only']);
  });

  it('Auto wraps a pod whose agent-runtime is present, and mounts sandbox-env on its sidecar only', () => {
    const input = pod([main({ command: ['run'] })], {
      initContainers: [sidecar('agent-runtime', 'agent-runtime:1'), sidecar('csi-sidecar', 'csi:1')],
    });
    const { pod: out, report } = inject(input, ['agent-runtime', 'csi'], 'Auto');
    expect(first(out).command).toEqual([...W, '--']);
    expect(report.wrapped).toEqual(['main']);
    expect(report.warnings).toEqual([]);
    const mounts = (name: string) => out.spec.initContainers?.find((c) => c.name === name)?.volumeMounts;
    expect(mounts('agent-runtime')).toEqual([{ name: 'sandbox-env', mountPath: '/var/sandbox' }]);
    expect(mounts('csi-sidecar')).toBeUndefined();
  });

  it('Auto leaves the containers of a present generic runtime alone', () => {
    const input = pod([main({ command: ['run'] }), { name: 'traffic-proxy', image: 'proxy:2', command: ['proxy'] }], {
      initContainers: [sidecar('agent-runtime', 'agent-runtime:1'), { name: 'proxy-init', image: 'proxy-init:1' }],
    });
    const { pod: out } = inject(input, ['agent-runtime', 'traffic-proxy'], 'Auto');
    expect(out.spec.containers.find((c) => c.name === 'traffic-proxy')?.command).toEqual(['proxy']);
  });

  it("Auto wraps a container of the pod that only shares its name with a skipped runtime's template", () => {
    const own = { name: 'traffic-proxy', image: 'my-proxy:7', command: ['serve'] };
    const { pod: out, report } = inject(
      pod([main({ command: ['run'] }), own]),
      ['agent-runtime', 'traffic-proxy'],
      'Auto',
    );
    expect(report.skipped.map((s) => s.runtime)).toEqual(['traffic-proxy']);
    expect(out.spec.containers.find((c) => c.name === 'traffic-proxy')?.command).toEqual([...W, '--']);
    expect(report.wrapped).toEqual(['main', 'traffic-proxy']);
  });
});

describe('EnvVarsInjectionPolicy Auto', () => {
  const app = main({
    command: ['python', 'app.py'],
    args: ['--port', '80'],
    readinessProbe: { exec: { command: ['ready'] } },
    livenessProbe: { httpGet: { port: 80 } },
    startupProbe: { exec: { command: [] } },
    lifecycle: { preStop: { exec: { command: ['bye'] } } },
  });

  it('wraps commands and exec probes only; http probes, empty exec and hooks stay', () => {
    const { pod: out, report } = inject(pod([app]), ['agent-runtime'], 'Auto');
    const c = first(out);
    expect(c.command).toEqual([...W, '--']);
    expect(c.args).toEqual(['python', 'app.py', '--port', '80']);
    expect(c.readinessProbe?.exec?.command).toEqual([...W, '--probe', '--', 'ready']);
    expect(c.livenessProbe).toEqual({ httpGet: { port: 80 } });
    expect(c.startupProbe).toEqual({ exec: { command: [] } });
    expect(c.lifecycle?.preStop).toEqual({ exec: { command: ['bye'] } });
    expect(c.volumeMounts).toContainEqual({ name: 'sandbox-env', mountPath: '/var/sandbox' });
    expect(out.spec.volumes).toContainEqual({ name: 'sandbox-env', emptyDir: {} });
    expect(out.spec.initContainers?.[0]?.volumeMounts).toContainEqual({
      name: 'sandbox-env',
      mountPath: '/var/sandbox',
    });
    expect(report.wrapped).toEqual(['main']);
    expect(report.warnings).toEqual([]);
  });

  it('does nothing but warn when agent-runtime is not in the pod', () => {
    const { pod: out, report } = inject(pod([app]), ['csi'], 'Auto');
    expect(first(out).command).toEqual(['python', 'app.py']);
    expect(out.spec.volumes?.some((v) => v.name === 'sandbox-env')).toBe(false);
    expect(report.warnings).toEqual([say.noAgentRuntimeWarning()]);
  });

  it('applies when agent-runtime was injected before and is not asked now', () => {
    const before = inject(pod([main({ command: ['run'] })]), ['agent-runtime']).pod;
    const { pod: out } = inject(before, ['csi'], 'Auto');
    expect(first(out).command).toEqual([...W, '--']);
  });

  it('leaves containers without command, already wrapped ones, init and injected containers alone', () => {
    const wrapped = main({ name: 'done', command: [...W, '--'], args: ['x'] });
    const input = pod([main({ name: 'entry' }), wrapped], { initContainers: [{ name: 'setup', command: ['init'] }] });
    const { pod: out } = inject(input, ['agent-runtime', 'traffic-proxy'], 'Auto');
    expect(out.spec.containers.find((c) => c.name === 'entry')?.command).toBeUndefined();
    expect(out.spec.containers.find((c) => c.name === 'done')).toEqual(wrapped);
    expect(out.spec.containers.find((c) => c.name === 'traffic-proxy')?.command).toEqual(['proxy']);
    expect(out.spec.initContainers?.find((c) => c.name === 'setup')?.command).toEqual(['init']);
  });

  it('does not wrap a container that mounts something else at /var/sandbox, with a warning', () => {
    const blocked = main({
      name: 'worker',
      command: ['run'],
      volumeMounts: [{ name: 'data', mountPath: '/var/sandbox' }],
    });
    const { pod: out, report } = inject(pod([main(), blocked]), ['agent-runtime'], 'Auto');
    expect(out.spec.containers[1]?.command).toEqual(['run']);
    expect(report.warnings).toEqual([say.containerMountBlocksWarning('worker', 'data')]);
  });

  it('wraps nothing at all when the main container mounts something else at /var/sandbox, with a warning', () => {
    const blocked = main({ volumeMounts: [{ name: 'data', mountPath: '/var/sandbox' }] });
    const worker = main({ name: 'worker', command: ['work'] });
    const { pod: out, report } = inject(pod([blocked, worker]), ['agent-runtime'], 'Auto');
    expect(out.spec.containers[1]?.command).toEqual(['work']);
    expect(out.spec.volumes?.some((v) => v.name === 'sandbox-env')).toBe(false);
    expect(out.spec.initContainers?.[0]?.volumeMounts?.some((m) => m.name === 'sandbox-env')).toBe(false);
    expect(report.wrapped).toEqual([]);
    expect(report.warnings).toEqual([say.mainMountBlocksWarning('main', 'data')]);
  });

  it('mounts sandbox-env on a main container without command, which envd writes from, and wraps the others', () => {
    const worker = main({ name: 'worker', command: ['work'] });
    const { pod: out, report } = inject(pod([main(), worker]), ['agent-runtime'], 'Auto');
    expect(first(out).command).toBeUndefined();
    expect(first(out).volumeMounts).toContainEqual({ name: 'sandbox-env', mountPath: '/var/sandbox' });
    expect(out.spec.containers[1]?.command).toEqual([...W, '--']);
    expect(report.wrapped).toEqual(['worker']);
    expect(report.warnings).toEqual([]);
    expect(inject(out, ['agent-runtime'], 'Auto').changed).toBe(false);
  });

  it('keeps an existing sandbox-env mount and volume', () => {
    const own = { name: 'sandbox-env', mountPath: '/var/sandbox', readOnly: true };
    const volume = { name: 'sandbox-env', emptyDir: { medium: 'Memory' } };
    const { pod: out } = inject(
      pod([main({ command: ['run'], volumeMounts: [own] })], { volumes: [volume] }),
      ['agent-runtime'],
      'Auto',
    );
    expect(first(out).volumeMounts?.filter((m) => m.name === 'sandbox-env')).toEqual([own]);
    expect(out.spec.volumes?.filter((v) => v.name === 'sandbox-env')).toEqual([volume]);
  });

  it('policy None wraps nothing', () => {
    const { pod: out } = inject(pod([app]), ['agent-runtime'], 'None');
    expect(first(out).command).toEqual(['python', 'app.py']);
  });

  it('with a wrapper image, adds the init container that installs the wrapper, once', () => {
    const { pod: out } = inject(pod([app]), ['agent-runtime'], 'Auto', CONFIGS, 'injector:1');
    const copier = out.spec.initContainers?.find((c) => c.name === 'sandbox-env-wrapper');
    expect(copier).toEqual({
      name: 'sandbox-env-wrapper',
      image: 'injector:1',
      command: ['install', '/var/sandbox'],
      volumeMounts: [{ name: 'sandbox-env', mountPath: '/var/sandbox' }],
      resources: { requests: { cpu: '10m', memory: '32Mi' }, limits: { cpu: '200m', memory: '96Mi' } },
      // What Pod Security `restricted` asks of every container.
      securityContext: {
        runAsNonRoot: true,
        runAsUser: 65532,
        runAsGroup: 65532,
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ['ALL'] },
        seccompProfile: { type: 'RuntimeDefault' },
      },
    });
    expect(inject(out, ['agent-runtime'], 'Auto', CONFIGS, 'injector:1').changed).toBe(false);
  });
});

describe('idempotency and the status annotation', () => {
  it('admitting the admitted pod again changes nothing', () => {
    const input = pod([main({ command: ['run'] })]);
    const once = inject(input, ['agent-runtime', 'csi', 'traffic-proxy'], 'Auto');
    const twice = inject(once.pod, ['agent-runtime', 'csi', 'traffic-proxy'], 'Auto');
    expect(twice.changed).toBe(false);
    expect(twice.pod).toBe(once.pod);
  });

  it('records injected and skipped runtimes when the pod changes', () => {
    const { pod: out } = inject(pod([main()], { initContainers: [{ name: 'csi-sidecar' }] }), ['agent-runtime', 'csi']);
    const status = JSON.parse(out.metadata.annotations?.[STATUS_ANNOTATION] ?? '{}') as Record<string, unknown>;
    expect(status).toMatchObject({
      injected: ['agent-runtime'],
      skipped: [{ runtime: 'csi', reason: 'container-name-conflict' }],
    });
  });

  it('records the status on a pod where every runtime was skipped, and only once', () => {
    const input = pod([main()], { initContainers: [{ name: 'csi-sidecar' }] });
    const once = inject(input, ['csi']);
    expect(withoutStatus(once.pod)).toEqual(input);
    expect(statusOf(once.pod)).toEqual({
      injected: [],
      present: [],
      skipped: [
        {
          runtime: 'csi',
          reason: 'container-name-conflict',
          message: 'container name conflict: "csi-sidecar" already exists',
        },
      ],
      wrapped: [],
    });
    expect(inject(once.pod, ['csi']).changed).toBe(false);
  });

  it('writes no status on a pod that asked for no runtime', () => {
    const input = pod([main()]);
    expect(inject(input, []).changed).toBe(false);
  });

  it('keeps what an earlier admission injected, found and wrapped in the record', () => {
    const sidecar = { name: 'csi-sidecar', image: 'csi:1', restartPolicy: 'Always' };
    const once = inject(
      pod([main({ command: ['run'] })], { initContainers: [sidecar] }),
      ['agent-runtime', 'csi'],
      'Auto',
    );
    expect(statusOf(once.pod)).toMatchObject({ injected: ['agent-runtime'], present: ['csi'], wrapped: ['main'] });
    const twice = inject(once.pod, ['agent-runtime', 'csi'], 'Auto');
    expect(twice.changed).toBe(false);
  });

  describe('the config revision', () => {
    const asked: (readonly string[])[] = [];
    const revision = (used: readonly string[]): string => {
      asked.push(used);
      return `rev-of-${[...used].sort().join('+')}`;
    };
    const injectWithRevision = (input: Pod, runtimes: string[]) =>
      injectRuntimes(input, {
        runtimes: runtimes.map((name) => ({ name, config: CONFIGS.get(name) ?? {} })),
        policy: 'None',
        allConfigs: CONFIGS,
        revision,
      });

    it('is of the keys of the runtimes injected or found present, not of those skipped', () => {
      const sidecar = { name: 'csi-sidecar', image: 'csi:1', restartPolicy: 'Always' };
      const found = injectWithRevision(pod([main()], { initContainers: [sidecar] }), ['agent-runtime', 'csi']);
      expect(statusOf(found.pod).revision).toBe('rev-of-agent-runtime+csi');
      const conflict = injectWithRevision(pod([main()], { initContainers: [{ name: 'csi-sidecar' }] }), [
        'agent-runtime',
        'csi',
      ]);
      expect(statusOf(conflict.pod).revision).toBe('rev-of-agent-runtime');
    });

    it("stays the first admission's: a reinvocation neither asks for it again nor changes it", () => {
      const once = injectWithRevision(pod([main()]), ['agent-runtime']);
      asked.length = 0;
      const twice = injectWithRevision(once.pod, ['agent-runtime']);
      expect(twice.changed).toBe(false);
      expect(asked).toEqual([]);
    });

    it('is not added to a record an earlier admission wrote without one', () => {
      const recorded = JSON.stringify({ injected: ['agent-runtime'], present: [], skipped: [], wrapped: [] });
      const input = pod([main()], {}, { annotations: { [STATUS_ANNOTATION]: recorded } });
      expect(injectWithRevision(input, ['agent-runtime']).changed).toBe(false);
    });
  });

  it('never writes to the input pod or the configs', () => {
    const input = pod(
      [main({ command: ['run'], env: [{ name: 'A', value: '1' }] })],
      { volumes: [{ name: 'v' }] },
      { annotations: {} },
    );
    const snapshot = structuredClone(input);
    const configs = structuredClone(CONFIGS);
    inject(input, ['agent-runtime', 'csi', 'traffic-proxy'], 'Auto');
    expect(input).toEqual(snapshot);
    expect(CONFIGS).toEqual(configs);
  });
});
