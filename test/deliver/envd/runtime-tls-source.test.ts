/**
 * The runtime TLS source against a loopback stand-in for kube-apiserver's Secret list and watch (the two
 * requests it makes), with client-node's real clients, so the field selector, the list-then-watch and each
 * watch event go through the same code as in a cluster.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig, Watch, type V1Secret } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { httpCall, requestTarget } from '../../../src/deliver/envd/http-call.js';
import {
  runtimeTlsSource,
  secretRefOf,
  type RuntimeTlsSource,
  type RuntimeTlsState,
} from '../../../src/deliver/envd/runtime-tls-source.js';
import { createCa } from '../../server/support/pki.js';
import { startEnvdDouble, type EnvdDouble } from '../../support/envd-double.js';
import { runtimeTlsPki, runtimeTlsSecretData, type RuntimeTlsPki } from '../../support/runtime-tls-pki.js';
import { waitUntil } from '../../support/wait-until.js';

const NAMESPACE = 'sandbox-system';
const NAME = 'runtime-tls';

interface FakeApi {
  url: string;
  /** The query of each list and watch request. */
  queries: URLSearchParams[];
  watching(): number;
  /** Sets the Secret (undefined: deletes it) and tells every open watch. */
  put(data: Record<string, string> | undefined): void;
  close(): Promise<void>;
}

async function fakeApi(initial: Record<string, string> | undefined): Promise<FakeApi> {
  let version = 1;
  let data = initial;
  const watchers = new Set<ServerResponse>();
  const queries: URLSearchParams[] = [];
  const secret = (): V1Secret => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: NAME, namespace: NAMESPACE, resourceVersion: String(version), uid: 'u-1' },
    data,
  });
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://api');
    if (url.pathname !== `/api/v1/namespaces/${NAMESPACE}/secrets`) {
      res.writeHead(404).end();
      return;
    }
    queries.push(url.searchParams);
    res.setHeader('content-type', 'application/json');
    if (url.searchParams.get('watch') === 'true') {
      res.writeHead(200);
      res.flushHeaders();
      watchers.add(res);
      res.on('close', () => watchers.delete(res));
      return;
    }
    res.end(
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'SecretList',
        metadata: { resourceVersion: String(version) },
        items: data === undefined ? [] : [secret()],
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    queries,
    watching: () => watchers.size,
    put(next) {
      const type = next === undefined ? 'DELETED' : data === undefined ? 'ADDED' : 'MODIFIED';
      const before = secret();
      version += 1;
      data = next;
      const object =
        next === undefined
          ? { ...before, metadata: { ...before.metadata, resourceVersion: String(version) } }
          : secret();
      for (const res of watchers) res.write(`${JSON.stringify({ type, object })}\n`);
    },
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function clientsOf(api: FakeApi): { core: CoreV1Api; watch: Watch } {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    // Plain HTTP on loopback, which client-node allows only with this set.
    clusters: [{ name: 'fake', server: api.url, skipTLSVerify: true }],
    users: [{ name: 'nobody' }],
    contexts: [{ name: 'fake', cluster: 'fake', user: 'nobody' }],
    currentContext: 'fake',
  });
  return { core: kubeConfig.makeApiClient(CoreV1Api), watch: new Watch(kubeConfig) };
}

/** How long each wait for the source may take, and how often it looks. */
const WAIT = { timeoutMs: 10_000, intervalMs: 5 } as const;

let pki: RuntimeTlsPki;
let otherCa: ReturnType<typeof createCa>;
let root: string;
let envd: EnvdDouble;
const running: { source: RuntimeTlsSource; api: FakeApi }[] = [];

beforeAll(async () => {
  pki = runtimeTlsPki();
  otherCa = createCa('next runtime CA');
  root = await mkdtemp(join(tmpdir(), 'si-runtime-tls-source-'));
  envd = await startEnvdDouble({
    root,
    tls: { key: pki.server.keyPem, cert: pki.server.certPem, ca: pki.ca.certPem, requestClientCert: true },
  });
});

afterEach(async () => {
  for (const { source, api } of running.splice(0)) {
    await source.stop();
    await api.close();
  }
});

afterAll(async () => {
  await envd.close();
  await rm(root, { recursive: true, force: true });
});

interface Started {
  api: FakeApi;
  source: RuntimeTlsSource;
  changes: RuntimeTlsState[];
  problems: [string, boolean][];
}

async function started(initial: Record<string, string> | undefined): Promise<Started> {
  const api = await fakeApi(initial);
  const changes: RuntimeTlsState[] = [];
  const problems: [string, boolean][] = [];
  const source = runtimeTlsSource({
    clients: clientsOf(api),
    secret: { namespace: NAMESPACE, name: NAME },
    onChange: (state) => changes.push(state),
    onProblem: (reason, kept) => problems.push([reason, kept]),
  });
  running.push({ source, api });
  source.start();
  await waitUntil(() => ({ synced: source.synced, watching: api.watching() }), {
    ...WAIT,
    what: 'the list and the watch',
    until: ({ synced, watching }) => synced && watching > 0,
  });
  return { api, source, changes, problems };
}

async function status(state: RuntimeTlsState): Promise<number> {
  if (state.kind !== 'ok') throw new Error(`no agent: ${state.kind}`);
  const url = `${envd.url}/files?path=/var/sandbox/.env_ready&username=root`;
  return (
    await httpCall(
      state.agent,
      requestTarget(url),
      { method: 'GET', headers: {} },
      { timeoutMs: 5000, maxBodyBytes: 1024 },
    )
  ).status;
}

describe('secretRefOf', () => {
  it.each([
    ['sandbox-system/runtime-tls', { namespace: 'sandbox-system', name: 'runtime-tls' }],
    ['a/b.c', { namespace: 'a', name: 'b.c' }],
    ['runtime-tls', undefined],
    ['a/b/c', undefined],
    ['/b', undefined],
    ['a/', undefined],
    ['A/b', undefined],
    ['a.b/c', undefined],
  ])('reads %j as %j', (text, expected) => {
    expect(secretRefOf(text)).toEqual(expected);
  });
});

describe('runtimeTlsSource', () => {
  it('is none, and synced, when no Secret is configured', () => {
    const source = runtimeTlsSource({
      clients: clientsOf({ url: 'http://127.0.0.1:1' } as FakeApi),
      secret: undefined,
    });
    source.start();
    expect(source.current()).toEqual({ kind: 'none' });
    expect(source.synced).toBe(true);
  });

  it('is broken until the Secret has been read', () => {
    const source = runtimeTlsSource({
      clients: clientsOf({ url: 'http://127.0.0.1:1' } as FakeApi),
      secret: { namespace: NAMESPACE, name: NAME },
    });
    expect(source.current()).toEqual({ kind: 'broken', reason: `Secret ${NAMESPACE}/${NAME} has not been read yet` });
    expect(source.synced).toBe(false);
  });

  it('reads the one Secret by its name, and its agent reaches a runtime that requires the client certificate', async () => {
    const { api, source, changes } = await started(runtimeTlsSecretData(pki.ca.certPem, pki.client));
    const state = source.current();
    expect(state).toMatchObject({ kind: 'ok', version: 1 });
    expect(changes).toHaveLength(1);
    expect(api.queries.map((q) => q.get('fieldSelector'))).toEqual([`metadata.name=${NAME}`, `metadata.name=${NAME}`]);
    expect(api.queries.map((q) => q.get('watch'))).toEqual([null, 'true']);
    expect(await status(state)).toBe(404);
  });

  it('makes a new agent when the bundle changes, and keeps the agent when the same one is written again', async () => {
    const { api, source, changes } = await started(runtimeTlsSecretData(pki.ca.certPem, pki.client));
    const first = source.current();
    api.put(runtimeTlsSecretData(pki.ca.certPem, pki.client));
    api.put(runtimeTlsSecretData(`${otherCa.certPem}${pki.ca.certPem}`, pki.client));
    await waitUntil(() => changes.length, { ...WAIT, what: 'the changed bundle', until: (n) => n === 2 });
    const second = source.current();
    expect(second).toMatchObject({ kind: 'ok', version: 2 });
    if (first.kind !== 'ok' || second.kind !== 'ok') return;
    expect(second.agent).not.toBe(first.agent);
    expect(await status(second)).toBe(404);
    api.put(runtimeTlsSecretData(otherCa.certPem, pki.client));
    await waitUntil(() => changes.length, { ...WAIT, what: 'a bundle without the runtime CA', until: (n) => n === 3 });
    // The runtime's CA is no longer trusted: the new agent refuses it (the double sends that CA in its chain).
    await expect(status(source.current())).rejects.toMatchObject({ problem: 'SELF_SIGNED_CERT_IN_CHAIN' });
  });

  it('keeps the last good bundle when the Secret turns bad or is deleted, saying so', async () => {
    const { api, source, changes, problems } = await started(runtimeTlsSecretData(pki.ca.certPem, pki.client));
    const good = source.current();
    api.put({
      ...runtimeTlsSecretData(pki.ca.certPem),
      'client.crt': Buffer.from(pki.client.certPem).toString('base64'),
    });
    await waitUntil(() => problems.length, { ...WAIT, what: 'the bad update', until: (n) => n === 1 });
    expect(problems[0]).toEqual([
      `Secret ${NAMESPACE}/${NAME}: data key "client.crt" is set without "client.key" (set both or neither)`,
      true,
    ]);
    api.put(undefined);
    await waitUntil(() => problems.length, { ...WAIT, what: 'the deletion', until: (n) => n === 2 });
    expect(problems[1]).toEqual([`Secret ${NAMESPACE}/${NAME} not found`, true]);
    expect(source.current()).toBe(good);
    expect(changes).toHaveLength(1);
  });

  it('is broken while the Secret is missing, and ok once it is created', async () => {
    const { api, source, changes } = await started(undefined);
    expect(source.current()).toEqual({ kind: 'broken', reason: `Secret ${NAMESPACE}/${NAME} not found` });
    api.put(runtimeTlsSecretData(pki.ca.certPem, pki.client));
    await waitUntil(() => source.current(), { ...WAIT, what: 'the created Secret', until: (s) => s.kind === 'ok' });
    expect(changes.map((c) => c.kind)).toEqual(['broken', 'ok']);
  });

  it('is broken, with the reason, while the Secret is not a bundle', async () => {
    const { source, problems } = await started({ 'tls.crt': 'eA==' });
    expect(source.current()).toEqual({
      kind: 'broken',
      reason: `Secret ${NAMESPACE}/${NAME}: data key "ca.crt" is missing or empty`,
    });
    expect(problems[0]?.[1]).toBe(false);
  });
});
