// The real promtool (test/e2e/cluster/build.sh promtool), run on the rule groups of the PrometheusRule of
// manifests/components/monitoring and on the unit tests of test/alerts/.
import { spawn } from 'node:child_process';
import { copyFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify as toYaml } from 'yaml';
import { repoRoot, toolPath } from './binaries.js';

export const ALERT_TESTS_DIR = path.join(repoRoot, 'test', 'alerts');
/** The name the tests of test/alerts/ give in rule_files: the rules are written under it next to them. */
export const RULES_FILE = 'sandbox-injector.rules.yaml';

export interface ToolResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs promtool in `cwd`; resolves on any exit code. */
export function runPromtool(args: string[], cwd: string): Promise<ToolResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(toolPath('promtool', 'promtool'), args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    child.on('error', reject);
    child.on('close', (code, signal) =>
      resolve({
        code: code ?? (signal === null ? 1 : 128),
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      }),
    );
  });
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
