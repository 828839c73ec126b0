// The alerts of manifests/components/monitoring, checked with the real promtool (built from
// github.com/prometheus/prometheus/cmd/promtool by test/e2e/cluster/build.sh promtool). The PrometheusRule is
// rendered as a user would render it (kubectl kustomize with the component), its spec written as a rules file,
// and then: `promtool check rules`, `promtool test rules` on the unit tests of test/alerts/ (each alert fires
// and stays quiet), and the same unit tests against broken copies of the rules, which must fail.
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/server/metrics.js';
import { repoRoot, resolveToolDir } from './support/binaries.js';
import { findObject, renderWithComponents } from './support/components.js';
import { at } from './support/json.js';
import {
  ALERTS,
  ALERT_TESTS_DIR,
  RULES_FILE,
  alertTestFiles,
  runPromtool,
  writeRulesWithTests,
} from './support/promtool.js';

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface RulesSpec {
  groups: { name: string; rules: Rule[] }[];
}

let root: string;
let spec: RulesSpec;
let subdirs = 0;

beforeAll(async () => {
  resolveToolDir('promtool');
  root = mkdtempSync(path.join(tmpdir(), 'si-e2e-alerts-'));
  const objects = await renderWithComponents(resolveToolDir('kube'), ['monitoring']);
  spec = at(findObject(objects, 'PrometheusRule', 'sandbox-injector'), 'spec') as RulesSpec;
});

afterAll(() => {
  if (root !== undefined) rmSync(root, { recursive: true, force: true });
});

const rules = (s: RulesSpec = spec): Rule[] => s.groups.flatMap((group) => group.rules);

function ruleOf(s: RulesSpec, alert: string): Rule {
  const found = rules(s).find((rule) => rule.alert === alert);
  if (found === undefined) throw new Error(`no rule for ${alert}`);
  return found;
}

/** A fresh folder holding `s` as the rules file and copies of the unit tests. */
function folderWith(s: RulesSpec): { dir: string; files: string[] } {
  subdirs += 1;
  const dir = path.join(root, `run-${subdirs}`);
  mkdirSync(dir);
  return { dir, files: writeRulesWithTests(dir, s) };
}

/** A copy of the rules with one alert's rule changed. */
function withRule(alert: string, change: (rule: Rule) => void): RulesSpec {
  const copy = structuredClone(spec);
  change(ruleOf(copy, alert));
  return copy;
}

/** GitHub's anchor for a markdown heading. */
const anchorOf = (heading: string): string =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');

describe('the PrometheusRule of manifests/components/monitoring', () => {
  it('passes promtool check rules', async () => {
    const { dir } = folderWith(spec);
    const result = await runPromtool(['check', 'rules', '--lint=all', '--lint-fatal', RULES_FILE], dir);
    expect(result.stderr).toBe('');
    expect(result.stdout).toContain(`SUCCESS: ${ALERTS.length} rules found`);
    expect(result.code).toBe(0);
  });

  it('would fail promtool check rules with a broken expression (control for the check above)', async () => {
    const { dir } = folderWith(
      withRule('SandboxInjectorDenials', (rule) => (rule.expr = rule.expr.replace('[5m]', '[5m'))),
    );
    const result = await runPromtool(['check', 'rules', RULES_FILE], dir);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/SandboxInjectorDenials|parse error/);
  });

  it('has exactly the six alerts, each with a severity, a summary, a description and a runbook section', () => {
    expect(rules().map((rule) => rule.alert)).toEqual([...ALERTS]);
    const alertsDoc = readFileSync(path.join(repoRoot, 'docs', 'alerts.md'), 'utf8');
    const anchors = new Set([...alertsDoc.matchAll(/^#{2,3} (.+)$/gm)].map(([, heading = '']) => anchorOf(heading)));
    for (const rule of rules()) {
      expect(['critical', 'warning'], rule.alert).toContain(rule.labels?.severity);
      expect(rule.annotations?.summary, rule.alert).toEqual(expect.any(String));
      expect(rule.annotations?.description, rule.alert).toEqual(expect.any(String));
      const url = rule.annotations?.runbook_url ?? '';
      expect(url, rule.alert).toMatch(/\/docs\/alerts\.md#[a-z0-9-]+$/);
      const anchor = url.slice(url.indexOf('#') + 1);
      expect(anchor, rule.alert).toBe(rule.alert.toLowerCase());
      expect(anchors.has(anchor), `docs/alerts.md has no section #${anchor}`).toBe(true);
    }
  });

  it('alerts on slow admissions at half the webhook timeout of manifests/base, a bucket bound of the histogram', async () => {
    const webhookConfig: unknown = parseYaml(
      readFileSync(path.join(repoRoot, 'manifests', 'base', 'mutatingwebhookconfiguration.yaml'), 'utf8'),
    );
    const timeoutSeconds = at(webhookConfig, 'webhooks', 0, 'timeoutSeconds');
    expect(timeoutSeconds).toEqual(expect.any(Number));
    const half = String(Number(timeoutSeconds) / 2);
    const expr = ruleOf(spec, 'SandboxInjectorSlowAdmissions').expr;
    expect(expr).toContain(`sandbox_injector_admission_duration_seconds_bucket{le="${half}"}`);
    // The server's histogram has that bound, or the bucket series would not exist.
    const metrics = createMetrics({ defaultMetrics: false, configLoadedAt: () => undefined, now: Date.now });
    metrics.admissionFailed('error', 0.001);
    const text = await metrics.registry.metrics();
    expect(text).toContain(`sandbox_injector_admission_duration_seconds_bucket{le="${half}",outcome="error"} 1`);
  });
});

describe('promtool test rules on test/alerts/', () => {
  it('passes every unit test', async () => {
    const { dir, files } = folderWith(spec);
    expect(files.length).toBeGreaterThan(0);
    const result = await runPromtool(['test', 'rules', ...files], dir);
    expect(result.stdout + result.stderr).not.toContain('FAILED');
    expect(result.stdout.match(/^ {2}SUCCESS$/gm)).toHaveLength(files.length);
    expect(result.code).toBe(0);
  });

  it('has, for every alert, an evaluation where it fires and one where it stays quiet', () => {
    const expectations = new Map<string, { fires: number; quiet: number }>(
      ALERTS.map((a) => [a, { fires: 0, quiet: 0 }]),
    );
    for (const name of alertTestFiles()) {
      const file: unknown = parseYaml(readFileSync(path.join(ALERT_TESTS_DIR, name), 'utf8'));
      expect(at(file, 'rule_files'), name).toEqual([RULES_FILE]);
      for (const test of (at(file, 'tests') ?? []) as unknown[]) {
        for (const check of (at(test, 'alert_rule_test') ?? []) as unknown[]) {
          const counts = expectations.get(String(at(check, 'alertname')));
          if (counts === undefined)
            throw new Error(`${name}: a test of an unknown alert ${String(at(check, 'alertname'))}`);
          const expected = at(check, 'exp_alerts');
          if (Array.isArray(expected) && expected.length > 0) counts.fires += 1;
          else counts.quiet += 1;
        }
      }
    }
    for (const [alert, counts] of expectations) {
      expect(counts.fires, `${alert} fires`).toBeGreaterThan(0);
      expect(counts.quiet, `${alert} stays quiet`).toBeGreaterThan(0);
    }
  });

  // Controls: the unit tests must catch a broken alert. Each mutation is tested against all test files.
  async function failuresWith(broken: RulesSpec): Promise<string> {
    const { dir, files } = folderWith(broken);
    const result = await runPromtool(['test', 'rules', ...files], dir);
    expect(result.code).not.toBe(0);
    return result.stdout + result.stderr;
  }

  it.each(ALERTS)('fail when %s never fires', async (alert) => {
    const output = await failuresWith(
      withRule(alert, (rule) => (rule.expr = `(${rule.expr}) and on () vector(0) > 1`)),
    );
    expect(output).toContain(`alertname: ${alert},`);
  });

  it.each(ALERTS)('fail when %s always fires', async (alert) => {
    const output = await failuresWith(withRule(alert, (rule) => (rule.expr = `(${rule.expr}) or on () vector(1)`)));
    expect(output).toContain(`alertname: ${alert},`);
  });

  it.each([
    [
      'SandboxInjectorConfigKeyStale',
      'a misspelt metric',
      (rule: Rule) => (rule.expr = rule.expr.replace('config_key_fallback', 'config_key_fallbacks')),
    ],
    [
      'SandboxInjectorSlowAdmissions',
      'a threshold of 10% instead of 1%',
      (rule: Rule) => (rule.expr = rule.expr.replace('> 0.01', '> 0.1')),
    ],
    [
      'SandboxInjectorCertificateExpiringSoon',
      'a certificate not yet loaded (0) counted as expiring',
      (rule: Rule) => (rule.expr = rule.expr.replace(' > 0)', ')')),
    ],
    ['SandboxInjectorDenials', 'no `for`', (rule: Rule) => delete rule.for],
    [
      'SandboxInjectorNoReadyReplica',
      'the fallback on `up` left out',
      (rule: Rule) => (rule.expr = rule.expr.slice(0, rule.expr.indexOf('\nor'))),
    ],
  ] as const)('fail when %s has %s', async (alert, _what, change) => {
    const broken = withRule(alert, change);
    expect(ruleOf(broken, alert)).not.toEqual(ruleOf(spec, alert));
    expect(await failuresWith(broken)).toContain(`alertname: ${alert},`);
  });
});
