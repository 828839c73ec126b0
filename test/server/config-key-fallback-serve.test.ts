/**
 * sandbox_injector_config_key_fallback{key} as the built `serve` exports it: its config file watch feeds the
 * gauge (src/cli/serve/config-source.ts), so a key broken in the file shows on /metrics, and fixing it removes
 * the series.
 */
import { rename, writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePorts } from '../e2e/support/free-ports.js';
import { loadConformanceCases } from '../support/conformance.js';
import { waitUntil } from '../support/wait-until.js';
import { spawnServer, type ChildServer } from './support/child-server.js';
import { temporaryDirectory } from './support/pki.js';

const configMap = loadConformanceCases().find((c) => c.name === 'agent-runtime-basic')?.configMap;
const good = (configMap?.data as Record<string, string> | undefined)?.['agent-runtime'];
if (configMap === undefined || configMap === null || good === undefined) {
  throw new Error('conformance case agent-runtime-basic has no agent-runtime key');
}

let dir: string;
let removeDir: () => Promise<void>;
let server: ChildServer | undefined;
let metricsPort: number;

/** Replaces the config file in one rename, as a mounted ConfigMap changes. */
async function writeConfig(data: Record<string, string>): Promise<void> {
  await writeFile(`${dir}/config.json.next`, JSON.stringify({ ...configMap, data }));
  await rename(`${dir}/config.json.next`, `${dir}/config.json`);
}

/** Resolves once the server has logged `message` `count` times in all. */
async function loggedTimes(message: string, count: number): Promise<void> {
  await waitUntil(() => server?.logs.filter((line) => line.msg === message).length ?? 0, {
    what: `${count} "${message}" log lines`,
    timeoutMs: 10_000,
    intervalMs: 20,
    until: (seen) => seen >= count,
    detail: () => server?.stderr() ?? '',
  });
}

async function fallbackSeries(): Promise<Record<string, string>> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  expect(text).toMatch(/^# TYPE sandbox_injector_config_key_fallback gauge$/m);
  const series: Record<string, string> = {};
  for (const [, key = '', value = ''] of text.matchAll(
    /^sandbox_injector_config_key_fallback\{key="([^"]*)"\} (\S+)$/gm,
  )) {
    series[key] = value;
  }
  return series;
}

beforeAll(async () => {
  ({ dir, remove: removeDir } = await temporaryDirectory('key-fallback'));
  [metricsPort = 0] = await freePorts(1);
  await writeConfig({ 'agent-runtime': good, csi: good });
  server = await spawnServer(
    [
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--metrics-port',
      String(metricsPort),
      '--config-file',
      `${dir}/config.json`,
      '--self-signed-dir',
      `${dir}/certs`,
    ],
    dir,
  );
});

afterAll(async () => {
  if (server !== undefined && server.child.exitCode === null) {
    server.child.kill('SIGTERM');
    await server.exited;
  }
  await removeDir();
});

describe('serve with a config file', () => {
  it('exports a fallback series for a key broken after a valid version, and drops it when the key is fixed', async () => {
    await loggedTimes('injection config loaded', 1);
    expect(await fallbackSeries()).toEqual({});

    await writeConfig({ 'agent-runtime': good, csi: '{"mainContainer": ' });
    await loggedTimes('injection config key is invalid: its last valid version stays in use', 1);
    expect(await fallbackSeries()).toEqual({ csi: '1' });

    await writeConfig({ 'agent-runtime': good, csi: good });
    await loggedTimes('injection config loaded', 3);
    expect(await fallbackSeries()).toEqual({});
  });
});
