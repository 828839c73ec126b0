// The report around the checks: which run, the text and JSON forms, the options, the registry rule, and the
// install's default list kept equal to the manifests'.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { INSTALL_TRUSTED_CREATORS } from '../../../src/cli/preflight/deployments.js';
import { isPublicRegistry, registryOf } from '../../../src/cli/preflight/injector-image.js';
import { parsePreflightOptions, PREFLIGHT_OPTION_ROWS } from '../../../src/cli/preflight/options.js';
import { renderJson, renderText, runChecks } from '../../../src/cli/preflight/report.js';
import { ABSENT, goodFacts } from './facts-builder.js';

describe('runChecks', () => {
  it('runs every check in order on an install', () => {
    expect(runChecks(goodFacts()).map((result) => [result.name, result.ok])).toEqual([
      ['kubernetes-version', true],
      ['sandbox-crd', true],
      ['injection-config', true],
      ['trusted-creators', true],
      ['webhook-configuration', true],
      ['webhook-endpoints', true],
      ['deliver-env', true],
      ['injector-image', true],
    ]);
  });

  it('--before-install leaves out the checks of the installed webhook and deliver-env', () => {
    const names = runChecks({ ...goodFacts(), beforeInstall: true }).map((result) => result.name);
    expect(names).toEqual([
      'kubernetes-version',
      'sandbox-crd',
      'injection-config',
      'trusted-creators',
      'injector-image',
    ]);
  });
});

describe('the report', () => {
  const facts = goodFacts();
  const results = runChecks({ ...facts, crd: ABSENT });

  it('is one line per check for a person, the fix after a failure', () => {
    const lines = renderText(results).split('\n');
    expect(lines[1]).toBe(
      'FAIL  sandbox-crd            CRD sandboxes.agents.kruise.io is not installed; fix: install OpenKruise Agents (its CRDs) first',
    );
    expect(lines[0]).toBe('ok    kubernetes-version     Kubernetes v1.31.2 (1.29 or later)');
    expect(lines.at(-2)).toBe('1 of 8 checks fail');
  });

  it('is the same facts as JSON, one object per check', () => {
    const parsed = JSON.parse(renderJson(results)) as unknown[];
    expect(parsed).toHaveLength(8);
    expect(parsed[1]).toEqual({
      name: 'sandbox-crd',
      ok: false,
      message: 'CRD sandboxes.agents.kruise.io is not installed',
      fix: 'install OpenKruise Agents (its CRDs) first',
    });
    expect(parsed[0]).toMatchObject({ name: 'kubernetes-version', ok: true, fix: null });
  });
});

describe('preflight options', () => {
  it("defaults the objects' names to serve's and deliver-env's", () => {
    const read = parsePreflightOptions(['--kubeconfig', 'k', '-o', 'json'], {});
    expect(read).toMatchObject({
      kind: 'options',
      options: {
        kubeconfig: 'k',
        output: 'json',
        configNamespace: 'sandbox-system',
        configName: 'sandbox-injection-config',
        webhookConfigName: 'sandbox-injector',
        leaseName: 'sandbox-injector-deliver-env',
        controllerDeployment: 'sandbox-controller-manager',
        auto: false,
        beforeInstall: false,
      },
    });
  });

  it.each([
    [[], /--kubeconfig \(SANDBOX_INJECTOR_KUBECONFIG\) is required/],
    [['--kubeconfig', 'k', '--trusted-creators', 'a,'], /--trusted-creators .*entry 2 of "a," is empty/],
    [['--kubeconfig', 'k', '-o', 'yaml'], /--output .*must be equal to one of the allowed values \(text, json\)/],
  ])('refuses %j', (argv, problem) => {
    const read = parsePreflightOptions(argv, {});
    expect(read.kind).toBe('refused');
    expect(read.kind === 'refused' ? read.problems.join('; ') : '').toMatch(problem);
  });
});

describe('the registry rule', () => {
  it.each([
    ['python:3.12', 'docker.io', true],
    ['library/python', 'docker.io', true],
    ['ghcr.io/o/sandbox-injector:1', 'ghcr.io', true],
    ['registry.k8s.io/pause:3.10', 'registry.k8s.io', true],
    ['index.docker.io/library/python', 'docker.io', true],
    ['registry.example.com/sandbox-injector:0.1.0', 'registry.example.com', false],
    ['localhost:5000/si', 'localhost:5000', false],
    ['localhost/si', 'localhost', false],
    ['123456789.dkr.ecr.us-east-1.amazonaws.com/si@sha256:abc', '123456789.dkr.ecr.us-east-1.amazonaws.com', false],
  ])('%s is on %s (public: %s)', (image, registry, isPublic) => {
    expect(registryOf(image)).toBe(registry);
    expect(isPublicRegistry(registryOf(image))).toBe(isPublic);
  });
});

describe("the install's default trusted creators", () => {
  it('are the list manifests/base/deployment.yaml gives serve', () => {
    const text = readFileSync(new URL('../../../manifests/base/deployment.yaml', import.meta.url), 'utf8');
    const [deployment] = parseAllDocuments(text).map((doc) => doc.toJS() as Record<string, unknown>);
    const args = JSON.stringify(deployment);
    expect(args).toContain(`"--trusted-creators=${INSTALL_TRUSTED_CREATORS}"`);
  });
});

describe("the manifests' names", () => {
  it('are the default webhook configuration', () => {
    const text = readFileSync(
      new URL('../../../manifests/base/mutatingwebhookconfiguration.yaml', import.meta.url),
      'utf8',
    );
    const [configuration] = parseAllDocuments(text).map((doc) => doc.toJS() as { metadata: { name: string } });
    expect(configuration?.metadata.name).toBe(PREFLIGHT_OPTION_ROWS.webhookConfigName.default);
  });
});
