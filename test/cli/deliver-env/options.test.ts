/** deliver-env's options: the rows' defaults, durations, the checks across them, and the one in-pod test. */
import { describe, expect, it } from 'vitest';
import { parseDeliverOptions, replacementSettings, requiresRuntimeTls } from '../../../src/cli/deliver-env/options.js';

const KUBECONFIG = ['--kubeconfig', '/k'];

function noFileLookups(path: string): boolean {
  throw new Error(`unexpected lookup of ${path}`);
}

function problemsOf(argv: string[], env: NodeJS.ProcessEnv = {}, fileExists = noFileLookups): readonly string[] {
  const parsed = parseDeliverOptions(argv, env, fileExists);
  if (parsed.kind !== 'refused') throw new Error(`expected the options refused, got ${JSON.stringify(parsed)}`);
  return parsed.problems;
}

describe('parseDeliverOptions', () => {
  it('has the durations in milliseconds by default, and takes Go durations', () => {
    const parsed = parseDeliverOptions(KUBECONFIG, {}, noFileLookups);
    expect(parsed).toMatchObject({
      kind: 'options',
      options: {
        leaseDurationMs: 15_000,
        leaseRenewDeadlineMs: 10_000,
        leaseRetryMs: 2000,
        requestTimeoutMs: 5000,
        backoffMinMs: 500,
        backoffMaxMs: 60_000,
      },
    });
    const given = parseDeliverOptions(
      [...KUBECONFIG, '--backoff-min', '250ms', '--lease-duration=20s', '--lease-renew-deadline', '12.5s'],
      { SANDBOX_INJECTOR_REQUEST_TIMEOUT: '1m' },
      noFileLookups,
    );
    expect(given).toMatchObject({
      kind: 'options',
      options: { backoffMinMs: 250, leaseDurationMs: 20_000, leaseRenewDeadlineMs: 12_500, requestTimeoutMs: 60_000 },
    });
    expect(Object.isFrozen(given.kind === 'options' ? given.options : undefined)).toBe(true);
  });

  it('checks the Lease timings and the backoff against each other, all at once', () => {
    expect(
      problemsOf([...KUBECONFIG, '--backoff-min', '5s', '--backoff-max', '100ms', '--lease-retry', '10s']),
    ).toEqual([
      '--backoff-min (SANDBOX_INJECTOR_BACKOFF_MIN) must not exceed --backoff-max (SANDBOX_INJECTOR_BACKOFF_MAX)',
      '--lease-retry (SANDBOX_INJECTOR_LEASE_RETRY) must be below --lease-renew-deadline (SANDBOX_INJECTOR_LEASE_RENEW_DEADLINE)',
    ]);
    expect(problemsOf([...KUBECONFIG, '--lease-duration', '15500ms'])).toEqual([
      '--lease-duration (SANDBOX_INJECTOR_LEASE_DURATION): must be a whole number of 1s (15s500ms is not)',
    ]);
  });

  it('needs a kubeconfig unless it runs in a pod whose service-account token is mounted', () => {
    const pod = { KUBERNETES_SERVICE_HOST: '10.96.0.1' };
    const needs = 'needs --kubeconfig (SANDBOX_INJECTOR_KUBECONFIG) outside a pod';
    expect(problemsOf([])).toEqual([expect.stringContaining(needs)]);
    expect(problemsOf([], pod, () => false)).toEqual([expect.stringContaining(needs)]);
    expect(parseDeliverOptions([], pod, () => true).kind).toBe('options');
  });

  it.each([
    ['--lease-duration-seconds', '15', '--lease-duration', '15s'],
    ['--lease-renew-deadline-seconds', '10', '--lease-renew-deadline', '10s'],
    ['--lease-retry-seconds', '2', '--lease-retry', '2s'],
    ['--request-timeout-ms', '5000', '--request-timeout', '5000ms'],
    ['--backoff-min-ms', '500', '--backoff-min', '500ms'],
    ['--backoff-max-ms', '60000', '--backoff-max', '60000ms'],
  ])('refuses the old %s, naming its new form', (old, value, now, example) => {
    expect(problemsOf([...KUBECONFIG, old, value])).toEqual([
      `${old} is now ${now}, which takes a duration such as ${example}`,
    ]);
  });
});

describe('--require-runtime-tls', () => {
  const required = (argv: string[]): boolean => {
    const parsed = parseDeliverOptions([...KUBECONFIG, ...argv], {}, noFileLookups);
    if (parsed.kind !== 'options') throw new Error(JSON.stringify(parsed));
    return requiresRuntimeTls(parsed.options);
  };

  it('is on once a TLS bundle is configured, unless turned off; off without one, unless turned on', () => {
    expect(required([])).toBe(false);
    expect(required(['--runtime-tls-secret', 'ns/tls'])).toBe(true);
    expect(required(['--runtime-tls-secret', 'ns/tls', '--no-require-runtime-tls'])).toBe(false);
    expect(required(['--require-runtime-tls'])).toBe(true);
  });
});

describe('replacementSettings', () => {
  const settingsOf = (argv: string[]) => {
    const parsed = parseDeliverOptions([...KUBECONFIG, ...argv], {}, noFileLookups);
    if (parsed.kind !== 'options') throw new Error(JSON.stringify(parsed));
    return replacementSettings(parsed.options);
  };

  it('is off unless --replace-pool-pods is given, with bounds that keep most of a pool Ready by default', () => {
    expect(settingsOf([])).toBeUndefined();
    expect(settingsOf(['--replace-pool-pods', 'stale,missing'])).toEqual({
      states: new Set(['stale', 'missing']),
      maxAtOnce: 5,
      maxPerPool: { kind: 'percent', percent: 20 },
      readyTimeoutMs: 300_000,
    });
    expect(settingsOf(['--replace-pool-pods=missing', '--replace-max-per-pool=2'])).toMatchObject({
      states: new Set(['missing']),
      maxPerPool: { kind: 'count', count: 2 },
    });
  });

  it.each([['all'], ['missing,'], ['missing,fine'], ['']])('refuses the states %j', (states) => {
    const argv = states === '' ? ['--replace-pool-pods='] : ['--replace-pool-pods', states];
    expect(problemsOf([...KUBECONFIG, ...argv]).join('\n')).toMatch(/--replace-pool-pods/);
  });

  it.each([['0'], ['0%'], ['101%'], ['1.5'], ['-1']])('refuses a per-pool bound of %j', (bound) => {
    expect(problemsOf([...KUBECONFIG, `--replace-max-per-pool=${bound}`]).join('\n')).toMatch(/--replace-max-per-pool/);
  });
});
