import { mkdtempSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { MAX_INPUT_BYTES } from '../../src/cli/io.js';
import { STATUS_ANNOTATION } from '../../src/injection/index.js';
import { BODY_LIMIT_BYTES } from '../../src/server/app.js';
import { runCli } from '../support/cli.js';
import { reviewFor } from '../support/conformance.js';

const CONFIG = new URL('../../manifests/components/injection-config/injection-config.yaml', import.meta.url).pathname;
const work = mkdtempSync(join(tmpdir(), 'si-cli-'));

const cli = runCli;

function file(name: string, content: unknown): string {
  const path = join(work, name);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

const pod = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'p', annotations: { 'agents.kruise.io/runtimes': 'agent-runtime' } },
  spec: { containers: [{ name: 'main', image: 'python:3.12', command: ['python', 'app.py'] }] },
};

describe('sandbox-injector review', () => {
  it('prints the response for a review on stdin, exit 0 also when denied', async () => {
    const denied = structuredClone(pod);
    denied.metadata.annotations['agents.kruise.io/runtimes'] = 'gpu';
    const run = await cli(['review', '--config-file', CONFIG], JSON.stringify(reviewFor(denied, 'u-9')));
    expect(run.code).toBe(0);
    const review = JSON.parse(run.stdout) as {
      response: { uid: string; allowed: boolean; status: { message: string } };
    };
    expect(review.response).toMatchObject({ uid: 'u-9', allowed: false });
    expect(review.response.status.message).toContain('"gpu"');
  });

  it('without --config-file behaves as if the ConfigMap does not exist', async () => {
    const run = await cli(['review', '-f', file('r.json', reviewFor(pod, 'u-1'))]);
    expect(JSON.parse(run.stdout)).toEqual({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: { uid: 'u-1', allowed: true },
    });
  });

  it.each([
    ['a file that is not JSON', () => ['-f', file('bad.json', '{"apiVersion": ')], /bad\.json: not valid JSON/],
    [
      'a review without request',
      () => ['-f', file('noreq.json', { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' })],
      /noreq\.json: malformed AdmissionReview: field request is required/,
    ],
    ['a missing file', () => ['-f', join(work, 'absent.json')], /cannot read .*absent\.json: ENOENT/],
    [
      'a ConfigMap that is not a ConfigMap',
      () => [
        '--config-file',
        file('secret.yaml', 'apiVersion: v1\nkind: Secret\n'),
        '-f',
        file('ok.json', reviewFor(pod)),
      ],
      /secret\.yaml: not a ConfigMap/,
    ],
    ['an unknown flag', () => ['--nope'], /Unknown option '--nope'/],
    [
      'a --poststart-conflict that is neither skip nor merge',
      () => ['--poststart-conflict', 'chain', '-f', file('ok.json', reviewFor(pod))],
      /--poststart-conflict: "chain" is not one of skip, merge/,
    ],
  ])('refuses %s with a message on stderr and a non-zero exit', async (_name, args, message) => {
    const run = await cli(['review', ...args()]);
    expect(run.code).not.toBe(0);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(message);
  });
});

describe('sandbox-injector inject', () => {
  it('prints the mutated pod as YAML', async () => {
    const run = await cli(['inject', '--config-file', CONFIG, '-f', file('pod.yaml', pod)]);
    expect(run.code).toBe(0);
    const out = parse(run.stdout) as typeof pod & { spec: { initContainers: { name: string }[] } };
    expect(out.spec.initContainers.map((c) => c.name)).toEqual(['agent-runtime']);
    expect(out.metadata.annotations).toHaveProperty([STATUS_ANNOTATION]);
  });

  it('takes runtimes and policy from flags, as JSON, warnings on stderr', async () => {
    const run = await cli(
      ['inject', '--config-file', CONFIG, '--runtimes', 'csi', '--env-vars-injection-policy', 'Auto', '-o', 'json'],
      JSON.stringify(pod),
    );
    expect(run.code).toBe(0);
    const out = JSON.parse(run.stdout) as typeof pod & { spec: { initContainers: { name: string }[] } };
    expect(out.spec.initContainers.map((c) => c.name)).toEqual(['csi-sidecar']);
    expect(out.spec.containers[0]?.command).toEqual(['python', 'app.py']);
    expect(run.stderr).toMatch(/warning: pod default\/p: Auto: nothing wrapped, no agent-runtime/);
  });

  it('--wrapper-image adds the init container that installs run_with_envs.sh when commands are wrapped', async () => {
    const run = await cli(
      [
        'inject',
        '--config-file',
        CONFIG,
        '--env-vars-injection-policy',
        'Auto',
        '--wrapper-image',
        'injector:9',
        '-o',
        'json',
      ],
      JSON.stringify(pod),
    );
    expect(run.code).toBe(0);
    const out = JSON.parse(run.stdout) as {
      spec: { initContainers: { name: string; image?: string; command?: string[] }[] };
    };
    expect(out.spec.initContainers.map((c) => c.name)).toEqual(['agent-runtime', 'sandbox-env-wrapper']);
    expect(out.spec.initContainers[1]).toMatchObject({
      image: 'injector:9',
      command: ['node', '/app/dist/cli/main.js', 'install-wrapper', '--dir', '/var/sandbox'],
    });
  });

  it("--poststart-conflict merge chains the main container's postStart after the config's", async () => {
    const hooked = structuredClone(pod) as typeof pod & { spec: { containers: Record<string, unknown>[] } };
    const main = hooked.spec.containers[0];
    if (main === undefined) throw new Error('no container');
    main.lifecycle = { postStart: { exec: { command: ['mine'] } } };
    const skipped = await cli(['inject', '--config-file', CONFIG, '-o', 'json'], JSON.stringify(hooked));
    expect(skipped.stderr).toMatch(/agent-runtime: skipped, postStart conflict/);
    const merged = await cli(
      ['inject', '--config-file', CONFIG, '--poststart-conflict', 'merge', '-o', 'json'],
      JSON.stringify(hooked),
    );
    expect(merged.code).toBe(0);
    const out = JSON.parse(merged.stdout) as {
      spec: { containers: { lifecycle: { postStart: { exec: { command: string[] } } } }[] };
    };
    expect(out.spec.containers[0]?.lifecycle.postStart.exec.command.slice(-2)).toEqual(['--', 'mine']);
  });

  it('refuses a bad policy value, naming the flag and the allowed values', async () => {
    const run = await cli(['inject', '--env-vars-injection-policy', 'Sometimes'], JSON.stringify(pod));
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(
      /--env-vars-injection-policy: "Sometimes" is not a valid EnvVarsInjectionPolicy \(allowed: None, Auto\)/,
    );
  });

  it('reports a denial on stderr with a non-zero exit', async () => {
    const run = await cli(['inject', '--config-file', CONFIG, '--runtimes', 'gpu'], JSON.stringify(pod));
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/denied: runtime "gpu" has no key in ConfigMap/);
  });

  it('refuses input that is not a Pod', async () => {
    const run = await cli(['inject'], 'apiVersion: v1\nkind: Service\n');
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/not a Pod manifest/);
  });
});

/** Ten levels of ten aliases each: a few hundred bytes that expand to 10^10 nodes if let through. */
function aliasBomb(kind: string): string {
  const lines = ['a0: &a0 [x, x, x, x, x, x, x, x, x, x]'];
  for (let level = 1; level <= 10; level += 1)
    lines.push(
      `a${level}: &a${level} [${Array(10)
        .fill(`*a${level - 1}`)
        .join(', ')}]`,
    );
  return `kind: ${kind}\napiVersion: v1\n${lines.join('\n')}\n`;
}

describe('sandbox-injector names the file of a manifest it cannot read', () => {
  it.each([
    ['a pod', (path: string) => ['inject', '-f', path]],
    ['a ConfigMap', (path: string) => ['review', '--config-file', path, '-f', file('ok-review.json', reviewFor(pod))]],
  ])('a YAML error in %s ends with the sentence, not a dangling colon', async (_what, args) => {
    const bad = file('broken.yaml', 'apiVersion: v1\nkind: Pod\nmetadata: {name: [p\n');
    const run = await cli(args(bad));
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      new RegExp(`: ${bad.replaceAll('.', '\\.')}: not valid YAML or JSON: .+ at line \\d+, column \\d+\\n$`),
    );
  });

  it.each([
    ['a pod', (path: string) => ['inject', '-f', path], 'Pod'],
    [
      'a ConfigMap',
      (path: string) => ['review', '--config-file', path, '-f', file('ok-review.json', reviewFor(pod))],
      'ConfigMap',
    ],
  ])('an alias bomb in %s is refused, naming the file', async (_what, args, kind) => {
    const bomb = file(`bomb-${kind}.yaml`, aliasBomb(kind));
    const run = await cli(args(bomb));
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`${bomb}: Excessive alias count`);
  });
});

describe('sandbox-injector review and inject read what the server would read', () => {
  const poisoned =
    '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE","object":{"metadata":{"annotations":{"__proto__":{"x":"1"}}},"spec":{"containers":[]}}}}';

  it("review refuses a __proto__ key, as the server's body parser does", async () => {
    const run = await cli(['review', '-f', file('proto.json', poisoned)]);
    expect(run.code).not.toBe(0);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/proto\.json: not valid JSON: Object contains forbidden prototype property/);
  });

  it('inject refuses a __proto__ key in a YAML pod', async () => {
    const yaml =
      'apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n    __proto__: x\nspec:\n  containers: [{name: main}]\n';
    const run = await cli(['inject', '-f', file('proto.yaml', yaml)]);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/proto\.yaml: Object contains forbidden prototype property/);
  });

  it("refuses a file over the server's body limit without reading it", async () => {
    const big = join(work, 'big.json');
    writeFileSync(big, '');
    truncateSync(big, MAX_INPUT_BYTES + 1);
    const run = await cli(['inject', '-f', big]);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(new RegExp(`big\\.json is larger than ${MAX_INPUT_BYTES} bytes`));
  });

  it('stops reading standard input once it passes the limit', async () => {
    const run = await cli(['review'], ' '.repeat(MAX_INPUT_BYTES + 10));
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/standard input is larger than/);
  });

  it("uses the server's default body limit", () => {
    expect(MAX_INPUT_BYTES).toBe(BODY_LIMIT_BYTES);
  });
});

describe('sandbox-injector', () => {
  it('names an unknown command', async () => {
    const run = await cli(['frobnicate']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/unknown command "frobnicate"/);
  });

  it('install-wrapper names a missing --dir as such, not as a copy of the script', async () => {
    const missing = join(work, 'no-such-dir');
    const run = await cli(['install-wrapper', '--dir', missing]);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(`sandbox-injector install-wrapper: --dir ${missing}: no such directory\n`);
  });

  it('install-wrapper copies an executable run_with_envs.sh', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'si-wrapper-'));
    const run = await cli(['install-wrapper', '--dir', dir]);
    expect(run.code).toBe(0);
    const { statSync } = await import('node:fs');
    expect(statSync(join(dir, 'run_with_envs.sh')).mode & 0o777).toBe(0o755);
  });

  it('install-wrapper run again into a folder a root wrapper took: done if the script is there, else an error', async () => {
    const { chmodSync, chownSync, statSync, writeFileSync: write } = await import('node:fs');
    // The folder as the wrapper leaves it, run as root: root's, 1755; the script root's, 0555. The installer runs
    // as the image's nonroot user, 65532.
    const dir = mkdtempSync(join(tmpdir(), 'si-wrapper-taken-'));
    expect((await cli(['install-wrapper', '--dir', dir])).code).toBe(0);
    const script = join(dir, 'run_with_envs.sh');
    chmodSync(script, 0o555);
    chmodSync(dir, 0o1755);
    const again = await cli(['install-wrapper', '--dir', dir], '', { uid: 65532 });
    expect([again.code, again.stdout, again.stderr]).toEqual([
      0,
      `${script} is in place already, unchanged (${dir} is not writable here)\n`,
      '',
    ]);
    expect(statSync(script).mode & 0o7777).toBe(0o555);
    // Another script there is not taken for it.
    chmodSync(script, 0o755);
    write(script, '#!/bin/bash\n');
    chownSync(script, 0, 0);
    const other = await cli(['install-wrapper', '--dir', dir], '', { uid: 65532 });
    expect(other.code).toBe(1);
    expect(other.stderr).toMatch(/cannot write .*run_with_envs\.sh: .*EACCES/);
  });
});
