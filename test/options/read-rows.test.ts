/**
 * The one reader of option rows, on rows of its own: durations, renamed flags refused, every problem at once.
 * And src/options/ stays generic: it imports nothing of the product but how a caught value is read.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { option, withFormerFlags } from '../../src/options/option-row.js';
import { commandUsage, readOptions } from '../../src/options/read-rows.js';

const ROWS = withFormerFlags(
  {
    wait: option('wait', 'duration', 'how long to wait', { min: '1s', max: '1h' }, '30s'),
    lease: option('lease', 'duration', 'whole seconds only', { min: '2s', max: '5m', step: '1s' }, '15s'),
    pause: option('pause', 'duration', 'no default', { min: '0s', max: '1m' }),
    count: option('count', 'integer', 'a count', { minimum: 1, maximum: 10 }, 3),
  },
  { wait: ['wait-seconds', 's'], lease: ['lease-ms', 'ms'] },
);

function problemsOf(argv: string[], env: NodeJS.ProcessEnv = {}): readonly string[] {
  const read = readOptions(ROWS, argv, env);
  return read.kind === 'refused' ? read.problems : [];
}

describe('readOptions', () => {
  it('reads durations into milliseconds, defaults included, and leaves one without a default out', () => {
    expect(readOptions(ROWS, [], {})).toEqual({ kind: 'options', options: { wait: 30_000, lease: 15_000, count: 3 } });
    expect(readOptions(ROWS, ['--wait=1m30s', '--pause', '250ms'], { SANDBOX_INJECTOR_LEASE: '20s' })).toEqual({
      kind: 'options',
      options: { wait: 90_000, lease: 20_000, pause: 250, count: 3 },
    });
  });

  it('takes the flag over the env var, and an empty env var as unset', () => {
    const read = readOptions(ROWS, ['--wait', '2s'], { SANDBOX_INJECTOR_WAIT: '5s', SANDBOX_INJECTOR_PAUSE: '' });
    expect(read).toEqual({ kind: 'options', options: { wait: 2000, lease: 15_000, count: 3 } });
  });

  it('refuses a duration out of range, not whole steps, or without a unit, naming the flag and its env var', () => {
    expect(problemsOf(['--wait', '500ms'])).toEqual(['--wait (SANDBOX_INJECTOR_WAIT): must be at least 1s']);
    expect(problemsOf([], { SANDBOX_INJECTOR_WAIT: '2h' })).toEqual([
      '--wait (SANDBOX_INJECTOR_WAIT): must be at most 1h',
    ]);
    expect(problemsOf(['--lease', '2500ms'])).toEqual([
      '--lease (SANDBOX_INJECTOR_LEASE): must be a whole number of 1s (2s500ms is not)',
    ]);
    expect(problemsOf(['--pause', '30'])).toEqual([
      '--pause (SANDBOX_INJECTOR_PAUSE): "30" has no unit: add one, such as 30s or 30ms',
    ]);
  });

  it('refuses a former flag or its env var, giving the new one and the same value as a duration', () => {
    expect(problemsOf(['--wait-seconds', '10'])).toEqual([
      '--wait-seconds is now --wait, which takes a duration such as 10s',
    ]);
    expect(problemsOf([], { SANDBOX_INJECTOR_LEASE_MS: '1500' })).toEqual([
      'SANDBOX_INJECTOR_LEASE_MS is now SANDBOX_INJECTOR_LEASE, which takes a duration such as 1500ms',
    ]);
    // A value that was no number in the old unit is not translated: the example is the default.
    expect(problemsOf(['--wait-seconds=soon'])).toEqual([
      '--wait-seconds is now --wait, which takes a duration such as 30s',
    ]);
    expect(problemsOf([], { SANDBOX_INJECTOR_WAIT_SECONDS: '' })).toEqual([]);
  });

  it('reports every problem at once, the rows’ and the schema’s', () => {
    expect(problemsOf(['--wait', '1', '--count', '11', '--lease-ms', '5'])).toHaveLength(3);
  });

  it('answers help before reading anything else', () => {
    expect(readOptions(ROWS, ['--wait', 'x', '-h'], {})).toEqual({ kind: 'help' });
  });

  it('prints a duration default as a duration in --help', () => {
    expect(commandUsage('test', ROWS)).toContain('how long to wait [default: 30s]');
  });
});

describe('src/options/', () => {
  it('imports nothing of the product: only itself, how a caught value is read, and packages', () => {
    const dir = fileURLToPath(new URL('../../src/options/', import.meta.url));
    const outside = readdirSync(dir)
      .filter((name) => name.endsWith('.ts'))
      .flatMap((name) =>
        [...readFileSync(`${dir}${name}`, 'utf8').matchAll(/^(?:import|export)[^;]*? from '(\.[^']+)'/gms)].map(
          (match) => `${name}: ${match[1] ?? ''}`,
        ),
      )
      .filter((line) => !/: \.\/[^/]+$|: \.\.\/errors\/error-message\.js$/.test(line));
    expect(outside).toEqual([]);
  });
});
