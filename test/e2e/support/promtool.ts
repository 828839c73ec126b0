// The real promtool (test/e2e/cluster/build.sh promtool), run on the rule groups of the PrometheusRule of
// manifests/components/monitoring and on the unit tests of test/alerts/.
import { copyFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify as toYaml } from 'yaml';
import { repoRoot, toolPath } from './binaries.js';
import { runCollecting, type ToolResult } from './processes.js';

/** The alert names, in the rules' order; the chart and docs/alerts.md use them too. */
export const ALERTS = [
  'SandboxInjectorDenials',
  'SandboxInjectorRuntimeSkipped',
  'SandboxInjectorConfigKeyStale',
  'SandboxInjectorCertificateExpiringSoon',
  'SandboxInjectorSlowAdmissions',
  'SandboxInjectorNoReadyReplica',
] as const;

export const ALERT_TESTS_DIR = path.join(repoRoot, 'test', 'alerts');
/** The name the tests of test/alerts/ give in rule_files: the rules are written under it next to them. */
export const RULES_FILE = 'sandbox-injector.rules.yaml';

/** Runs promtool in `cwd`; resolves on any exit code. */
export function runPromtool(args: string[], cwd: string): Promise<ToolResult> {
  return runCollecting(toolPath('promtool', 'promtool'), args, { cwd }).done;
}

/** The file names of the promtool unit tests in test/alerts/. */
export function alertTestFiles(): string[] {
  return readdirSync(ALERT_TESTS_DIR)
    .filter((name) => name.endsWith('.yaml'))
    .sort();
}

/**
 * Writes `spec` (a PrometheusRule's spec: `{groups: [...]}`, which is a Prometheus rules file) into `dir` as
 * RULES_FILE, with copies of the unit tests beside it; returns the test file names.
 */
export function writeRulesWithTests(dir: string, spec: unknown): string[] {
  writeFileSync(path.join(dir, RULES_FILE), toYaml(spec));
  const files = alertTestFiles();
  for (const name of files) copyFileSync(path.join(ALERT_TESTS_DIR, name), path.join(dir, name));
  return files;
}
