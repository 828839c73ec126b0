/**
 * The checks in their order, run over the facts read, and the report: one line per check for a person, or the
 * same facts as JSON, one object per check (name, ok, message, fix).
 */
import {
  checkDeliverEnv,
  checkTrustedCreators,
  checkWebhookConfiguration,
  checkWebhookEndpoints,
} from './checks-install.js';
import { checkInjectionConfig, checkKubernetesVersion, checkSandboxCrd } from './checks-platform.js';
import type { CheckName, CheckResult, PreflightFacts } from './facts.js';
import { checkInjectorImage } from './injector-image.js';

type Check = (facts: Readonly<PreflightFacts>) => CheckResult;

const CHECKS: readonly (readonly [CheckName, Check])[] = [
  ['kubernetes-version', checkKubernetesVersion],
  ['sandbox-crd', checkSandboxCrd],
  ['injection-config', checkInjectionConfig],
  ['trusted-creators', checkTrustedCreators],
  ['webhook-configuration', checkWebhookConfiguration],
  ['webhook-endpoints', checkWebhookEndpoints],
  ['deliver-env', checkDeliverEnv],
  ['injector-image', checkInjectorImage],
];

/** What `--before-install` leaves out: the checks of objects only the install creates. */
const OF_THE_INSTALL: ReadonlySet<CheckName> = new Set(['webhook-configuration', 'webhook-endpoints', 'deliver-env']);

export function runChecks(facts: Readonly<PreflightFacts>): CheckResult[] {
  return CHECKS.filter(([name]) => !(facts.beforeInstall && OF_THE_INSTALL.has(name))).map(([, check]) => check(facts));
}

export function renderText(results: readonly CheckResult[]): string {
  const width = Math.max(...results.map((result) => result.name.length));
  const lines = results.map(
    ({ name, ok, message, fix }) =>
      `${ok ? 'ok  ' : 'FAIL'}  ${name.padEnd(width)}  ${message}${fix === null ? '' : `; fix: ${fix}`}`,
  );
  const failed = results.filter((result) => !result.ok).length;
  lines.push('', failed === 0 ? `all ${results.length} checks pass` : `${failed} of ${results.length} checks fail`);
  return `${lines.join('\n')}\n`;
}

export function renderJson(results: readonly CheckResult[]): string {
  return `${JSON.stringify(results, null, 2)}\n`;
}
