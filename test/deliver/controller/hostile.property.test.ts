/**
 * The delivery fuzz. Malformed Sandbox annotations (init-runtime-request, runtime URLs and their hosts, tokens
 * and the legacy token, TLS ports, the claimed label, pod IPs in the pod's status and in the Sandbox's, the pod's
 * injection status, and the candidate pods: their UIDs, phases, deletion, hostNetwork, a stranger beside them)
 * never crash the decision, never put a value or a token in a reason, and never aim a delivery anywhere but the
 * own IP of the one running pod that the Sandbox's status.podInfo.podUID names; and a long-lived controller facing a hostile envd (slow, 5xx, truncated,
 * redirects, huge bodies, hang-ups, refusals, listings that name paths of their own) never crashes, never asks
 * envd to touch a path outside the env folder, never reports a value or a token, still delivers the next good
 * claim, and, when that claim ends, clears nothing of the pod's own. `PROPERTY_RUNS=full` draws 100,000
 * annotation sets and 5,000 hostile sequences.
 *
 * The envd here is test/support/envd-double.ts, which follows envd's published file API; it is not the real envd.
 * Only loopback is ever contacted: fuzzed runtime URLs are only decided on, never called.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent as HttpsAgent } from 'node:https';
import { isIP } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimDecision, markerOf, type DeliverySandbox } from '../../../src/deliver/controller/claim.js';
import { Controller } from '../../../src/deliver/controller/controller.js';
import type { DeliveryOutcome } from '../../../src/deliver/controller/outcome.js';
import { envdFiles } from '../../../src/deliver/envd/envd-files.js';
import { eventFor } from '../../../src/deliver/controller/events.js';
import { isTempName } from '../../../src/deliver/envd/plan.js';
import { renderEnvFile } from '../../../src/envfile/render-env-file.js';
import type { Pod } from '../../../src/injection/index.js';
import { startEnvdDouble, type EnvdBehaviour, type EnvdDouble } from '../../support/envd-double.js';
import { FULL_RUNS, propertyRuns, propertyTimeout } from '../../support/property-runs.js';
import { ManualClock } from '../../support/manual-clock.js';
import { waitUntil } from '../../support/wait-until.js';

const SECRET = 'SECRET-';
const TLS_AGENT = new HttpsAgent();
const TOKEN_MARK = 'TOKEN-';
const STATUS = 'agents.kruise.io/runtime-injection-status';

const secretValue = fc.string({ maxLength: 20 }).map((s) => `${SECRET}${s}`);
const tokenValue = fc.string({ maxLength: 12 }).map((s) => `${TOKEN_MARK}${s}`);
const varName = fc
  .oneof(fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,8}$/), fc.string({ maxLength: 8 }))
  .filter((n) => !n.includes(SECRET) && !n.includes(TOKEN_MARK));
const envVars = fc.dictionary(
  varName,
  fc.oneof(secretValue, secretValue, fc.integer(), fc.constant(null), fc.array(secretValue, { maxLength: 2 })),
  { maxKeys: 5 },
);
const requestText = fc.oneof(
  fc
    .record(
      { envVars: fc.oneof(envVars, secretValue, fc.constant(null)), accessToken: fc.oneof(tokenValue, fc.integer()) },
      { requiredKeys: [] },
    )
    .map((r) => JSON.stringify(r)),
  envVars.map((v) => JSON.stringify(v)),
  fc.string({ maxLength: 60 }),
  envVars.map((v) => JSON.stringify({ envVars: v }).slice(0, -3)),
  fc.constant(''),
);
const runtimeUrl = fc.oneof(
  fc.constant(undefined),
  fc.webUrl({ withQueryParameters: true, withFragments: true }),
  fc.string({ maxLength: 30 }),
  tokenValue.map((t) => `http://user:${t}@rt.example:1`),
  fc.constantFrom(
    'https://rt:1',
    'javascript:alert(1)',
    'http://[::1]:49983/',
    'http://',
    'ftp://x/',
    'http://rt:99999',
  ),
);
const podIP = fc.oneof(fc.constant(undefined), fc.ipV4(), fc.ipV6(), fc.string({ maxLength: 20 }), fc.integer());
const hostUrl = fc
  .tuple(
    fc.oneof(
      fc.ipV4(),
      fc.ipV6().map((ip) => `[${ip}]`),
      fc.domain(),
    ),
    fc.integer({ min: 0, max: 70_000 }),
  )
  .map(([host, port]) => `http://${host}:${port}/`);
const tlsPort = fc.oneof(
  fc.constant(undefined),
  fc.integer({ min: -5, max: 70_000 }).map(String),
  fc.string({ maxLength: 8 }),
  fc.constantFrom('49984', '+443', '0443', ' 1', '1e3'),
);
const claimedLabel = fc.option(fc.constantFrom('true', 'false', 'True', ''), { nil: undefined });
const podUid = fc.constantFrom('u', 'other', '', undefined);
const phase = fc.constantFrom('Running', 'Running', 'Pending', 'Failed', 'Succeeded', 'Unknown', undefined);
/** Pods besides `u` that claim the Sandbox: a stranger's, an earlier one being deleted, a terminal one. */
const otherPod = fc.record({
  uid: fc.constantFrom('other', 'stranger'),
  phase,
  deleting: fc.boolean(),
  hostNetwork: fc.boolean(),
  ip: podIP,
});
/** What the kubelet reports of the containers, and shapes it never would: which instance runs (recycle.ts). */
const containerStatuses = fc.oneof(
  fc.constant(undefined),
  fc.anything(),
  fc.array(
    fc.record({
      name: fc.oneof(fc.constantFrom('main', 'other'), fc.anything()),
      containerID: fc.oneof(fc.constantFrom('containerd://a', ''), fc.anything()),
      state: fc.oneof(fc.record({ running: fc.anything() }), fc.anything()),
    }),
    { maxLength: 3 },
  ),
);
const status = fc.oneof(
  fc.constant(JSON.stringify({ wrapped: ['main'] })),
  fc.string({ maxLength: 30 }),
  fc.constant(JSON.stringify({ wrapped: 'main' })),
);

function withoutUndefined(map: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(map).filter((entry): entry is [string, string] => entry[1] !== undefined));
}

describe('delivery fuzz: malformed annotations', () => {
  const runs = propertyRuns(100_000);
  it(
    `for ${runs} annotation sets: a decision, never a crash, never a value or token in a reason`,
    () => {
      fc.assert(
        fc.property(
          fc.record({
            request: fc.option(requestText, { nil: undefined }),
            url: fc.oneof(runtimeUrl, hostUrl),
            legacy: fc.oneof(runtimeUrl, hostUrl),
            token: fc.option(tokenValue, { nil: undefined }),
            legacyToken: fc.option(tokenValue, { nil: undefined }),
            tlsPort,
            claimed: claimedLabel,
            infoIp: podIP,
            infoUid: podUid,
            ownIp: podIP,
            ownPhase: phase,
            ownDeleting: fc.boolean(),
            ownHostNetwork: fc.boolean(),
            ownListed: fc.boolean(),
            // UIDs are unique in a cluster, so they are here.
            others: fc.uniqueArray(otherPod, { maxLength: 2, selector: (o) => o.uid }),
            podStatus: status,
            statuses: containerStatuses,
            trust: fc.boolean(),
            bundle: fc.boolean(),
          }),
          (c) => {
            const sandbox: DeliverySandbox = {
              metadata: {
                name: 's',
                namespace: 'n',
                labels: c.claimed === undefined ? undefined : { 'agents.kruise.io/sandbox-claimed': c.claimed },
                annotations: withoutUndefined({
                  'agents.kruise.io/init-runtime-request': c.request,
                  'agents.kruise.io/runtime-url': c.url,
                  'e2b.agents.kruise.io/envd-url': c.legacy,
                  'agents.kruise.io/runtime-access-token': c.token,
                  'e2b.agents.kruise.io/envd-access-token': c.legacyToken,
                  'agents.kruise.io/runtime-tls-port': c.tlsPort,
                }),
              },
              status: { podInfo: { podIP: c.infoIp, podUID: c.infoUid } },
            };
            const candidate = (uid: string, podPhase: unknown, deleting: boolean, hostNetwork: boolean, ip: unknown) =>
              ({
                metadata: {
                  uid,
                  annotations: { [STATUS]: c.podStatus },
                  ...(deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
                },
                spec: { containers: [], hostNetwork },
                status: { phase: podPhase, podIP: ip, containerStatuses: c.statuses },
              }) as unknown as Pod;
            const pods = [
              ...(c.ownListed ? [candidate('u', c.ownPhase, c.ownDeleting, c.ownHostNetwork, c.ownIp)] : []),
              ...c.others.map((o) => candidate(o.uid, o.phase, o.deleting, o.hostNetwork, o.ip)),
            ];
            const tls = c.bundle
              ? ({ kind: 'ok', agent: TLS_AGENT, version: 1 } as const)
              : ({ kind: 'none' } as const);
            const decision = claimDecision(sandbox, pods, {
              runtimePort: 49983,
              trustRuntimeUrl: c.trust,
              requireTls: false,
              allowHostNetwork: false,
              tls,
            });
            if (decision.kind === 'held') expect(decision.reason).not.toMatch(/SECRET-|TOKEN-/);
            if (decision.kind === 'refused') {
              expect(decision.reason).not.toContain(SECRET);
              expect(decision.reason).not.toContain(TOKEN_MARK);
              expect(decision.reason.length).toBeLessThan(400);
            }
            const endpoint =
              decision.kind === 'deliver'
                ? decision.target.endpoint
                : decision.kind === 'unclaimed'
                  ? decision.endpoint
                  : undefined;
            if (endpoint === undefined) return;
            // The instances a recycled pod's next claim is decided on: names, IDs and states, whatever was there.
            const containers =
              decision.kind === 'deliver'
                ? decision.target.containers
                : decision.kind === 'unclaimed'
                  ? decision.containers
                  : [];
            for (const instance of containers) {
              expect(typeof instance.name).toBe('string');
              expect(instance.id === undefined || (typeof instance.id === 'string' && instance.id !== '')).toBe(true);
              expect(typeof instance.running).toBe('boolean');
            }
            expect(endpoint.url).toMatch(/^https?:\/\/[^/@?#]+(\/[^?#]*)?$/);
            if (decision.kind === 'deliver') expect(decision.target.marker).toBe(markerOf(decision.target.content));
            // Never another pod: only the one pod that podInfo.podUID names, running, not being deleted, not on the
            // host's network, with no other live pod claiming the Sandbox; and only at its own IP, unless the
            // operator trusts runtime URLs (a TLS runtime is always dialled at the pod IP).
            const live = (p: Pod) => {
              const st = p.status as { phase?: unknown };
              return p.metadata.deletionTimestamp === undefined && st.phase !== 'Failed' && st.phase !== 'Succeeded';
            };
            const named = pods.filter((p) => p.metadata.uid === c.infoUid && c.infoUid !== '');
            expect(named.length).toBe(1);
            const chosen = named[0];
            if (chosen === undefined) return;
            expect(live(chosen)).toBe(true);
            expect(pods.filter((p) => live(p) && p.metadata.uid !== chosen.metadata.uid)).toEqual([]);
            expect((chosen.spec as { hostNetwork?: unknown }).hostNetwork).not.toBe(true);
            const ownIp = (chosen.status as { podIP?: unknown; phase?: unknown }).podIP;
            const running = (chosen.status as { phase?: unknown }).phase === 'Running';
            const address = running && typeof ownIp === 'string' && isIP(ownIp) !== 0 ? ownIp : undefined;
            const host = new URL(endpoint.url).hostname.replace(/^\[|\]$/g, '');
            const tlsRuntime = c.tlsPort !== undefined && c.tlsPort !== '';
            if (c.trust && !tlsRuntime) return;
            expect(address).toBeDefined();
            expect(decision.kind === 'unclaimed' || decision.kind === 'deliver').toBe(true);
            expect(host).toBe(
              new URL(`http://${address?.includes(':') === true ? `[${address}]` : address}/`).hostname.replace(
                /^\[|\]$/g,
                '',
              ),
            );
            expect(endpoint.url.startsWith('https:')).toBe(tlsRuntime);
            expect(endpoint.tlsAgent === TLS_AGENT).toBe(tlsRuntime);
          },
        ),
        { numRuns: runs },
      );
    },
    propertyTimeout(runs, 2),
  );
});

// Names a hostile listing offers: the only answer of envd that goes into a path delivery builds.
const listedName = fc.oneof(
  fc.constantFrom('..', '.', '', '../../etc/passwd', '/etc/shadow', 'env.sh/../../x', '.env_wake', 'run_with_envs.sh'),
  fc.constantFrom('.env.sh.0123456789abcdef.tmp/../../x', '..%2f.env.sh.0123456789abcdef.tmp', ' .env_ready'),
  fc.string({ maxLength: 12 }),
);
const listing = fc
  .array(fc.record({ name: listedName, type: fc.constantFrom('', 'FILE_TYPE_FILE', 'FILE_TYPE_SYMLINK') }), {
    maxLength: 6,
  })
  .map((entries) => ({ listing: entries }));
const behaviour: fc.Arbitrary<EnvdBehaviour> = fc.oneof(
  fc.constantFrom<EnvdBehaviour>('slow', 'truncated', 'redirect', 'huge', 'hang-up'),
  fc.constantFrom(500, 502, 503, 507, 429, 408, 400, 401, 403, 404, 418).map((code) => ({ status: code })),
  listing,
);
/** Not the default folder: a path built from anything but the controller's setting lands outside it. */
const ENV_DIR = '/run/claim-env';
/** What a pod's folder holds of its own: clearing a claim must leave these. */
const OWN_FILES = ['run_with_envs.sh', 'notes.txt'];

describe('delivery fuzz: a hostile envd', () => {
  // Each sequence is several loopback requests and timeouts: npm test draws 50, the full run 5,000.
  const runs = FULL_RUNS ? 5_000 : 50;
  let dir: string;
  let double: EnvdDouble;
  let hostileAnswers = 0;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'si-deliver-fuzz-'));
    double = await startEnvdDouble({ root: dir, podDir: ENV_DIR, token: 'tok', slowMs: 150, halfWriteMs: 0 });
  });
  afterAll(async () => {
    await double.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it(
    `for ${runs} hostile answer sequences: no crash, no path outside the env folder, no value reported, the next good claim delivered, nothing of the pod's own cleared`,
    async () => {
      const clock = new ManualClock();
      const outcomes: DeliveryOutcome[] = [];
      const bugs: unknown[] = [];
      let current: { sandbox: DeliverySandbox; pod: Pod } | undefined;
      const controller = new Controller({
        cache: {
          get: () => current?.sandbox,
          keys: () => ['n/s'],
          podsOf: () => (current === undefined ? [] : [current.pod]),
        },
        envd: envdFiles({ timeoutMs: 60, maxBodyBytes: 4096, user: 'root' }),
        settings: {
          envDir: ENV_DIR,
          runtimePort: 1,
          trustRuntimeUrl: false,
          requireTls: false,
          allowHostNetwork: false,
          recycledPods: 'restart',
          concurrency: 2,
          backoff: { minMs: 10, maxMs: 100 },
        },
        tls: () => ({ kind: 'none' }),
        clock,
        random: Math.random,
        report: (outcome) => outcomes.push(outcome),
        onBug: (_key, error) => bugs.push(error),
      });
      controller.setTerm({ signal: new AbortController().signal, fresh: () => true });
      let serial = 0;
      /** As upstream's controller keeps it: status.podInfo.podUID names the current pod. */
      const sandbox = (request: Record<string, string>, podUid: string): DeliverySandbox => ({
        metadata: {
          name: 's',
          namespace: 'n',
          annotations: { ...request, 'agents.kruise.io/runtime-url': double.url },
        },
        status: { podInfo: { podUID: podUid } },
      });
      const claimWith = (vars: Record<string, string>) => {
        serial += 1;
        current = {
          sandbox: sandbox(
            { 'agents.kruise.io/init-runtime-request': JSON.stringify({ envVars: vars, accessToken: 'tok' }) },
            `pod-${serial}`,
          ),
          pod: {
            metadata: { uid: `pod-${serial}`, annotations: { [STATUS]: JSON.stringify({ wrapped: ['main'] }) } },
            spec: { containers: [] },
            status: { phase: 'Running', podIP: '127.0.0.1' },
          },
        };
        controller.enqueue('n/s');
      };
      /** The claim ends; its pod lives on, to be cleared. */
      const endClaim = () => {
        if (current !== undefined) current = { ...current, sandbox: sandbox({}, `pod-${serial}`) };
        controller.enqueue('n/s');
      };
      const idle = async () => {
        await new Promise((resolve) => setImmediate(resolve));
        await waitUntil(() => !controller.busy(), {
          what: 'the controller to settle',
          timeoutMs: 10_000,
          intervalMs: 2,
        });
      };
      const settle = async () => {
        await idle();
        for (let i = 0; i < 12 && clock.pending().length > 0; i += 1) {
          clock.fire();
          await idle();
        }
      };

      await fc.assert(
        fc.asyncProperty(
          fc.array(behaviour, { minLength: 1, maxLength: 5 }),
          fc.dictionary(fc.stringMatching(/^[A-Z][A-Z0-9_]{0,6}$/), secretValue, { minKeys: 1, maxKeys: 4 }),
          fc.dictionary(fc.stringMatching(/^[A-Z][A-Z0-9_]{0,6}$/), secretValue, { minKeys: 1, maxKeys: 4 }),
          fc.array(behaviour, { maxLength: 3 }),
          async (answers, hostileVars, goodVars, clearingAnswers) => {
            // The same content twice would be found delivered already ('unchanged'): the good claim must differ.
            fc.pre(JSON.stringify(renderEnvFile(hostileVars)) !== JSON.stringify(renderEnvFile(goodVars)));
            // A new pod: a new, empty volume. A request of an earlier case that the client gave up on may still
            // land in the old one, as it would in the old pod.
            const volume = mkdtempSync(path.join(dir, 'pod-'));
            for (const name of OWN_FILES) writeFileSync(path.join(volume, name), `${name} of the pod\n`);
            double.setRoot(volume);
            const queue = [...answers];
            hostileAnswers += queue.length;
            double.setBehaviour(() => queue.shift() ?? 'normal');
            claimWith(hostileVars);
            await settle();

            double.setBehaviour(undefined);
            claimWith(goodVars);
            await settle();
            const content = renderEnvFile(goodVars);
            expect(readFileSync(path.join(volume, 'env.sh'), 'utf8')).toBe(content);
            expect(readFileSync(path.join(volume, '.env_ready'), 'utf8')).toBe(markerOf(content));
            // Temporary files of an attempt whose Move was cut may stay (clearing removes them), and a wake sent
            // on a lying listing's word makes a file of .env_wake; nothing else.
            const expected = ['env.sh', '.env_ready', '.env_wake', ...OWN_FILES];
            expect(readdirSync(volume).filter((name) => !expected.includes(name) && !isTempName(name))).toEqual([]);
            expect(outcomes.at(-1)).toMatchObject({ kind: 'delivered' });

            // The claim ends while the pod lives: clearing lists the folder, which the hostile envd may answer.
            const cleanup = [...clearingAnswers];
            double.setBehaviour(() => cleanup.shift() ?? 'normal');
            endClaim();
            await settle();
            for (const name of OWN_FILES)
              expect(readFileSync(path.join(volume, name), 'utf8')).toBe(`${name} of the pod\n`);

            // Every path envd was asked to touch is the env folder itself (listed) or a file directly in it.
            const named = double.requests.flatMap((r) => r.paths);
            expect(named.length).toBeGreaterThan(0);
            const inFolder = (p: string) =>
              path.posix.normalize(p) === p && (p === ENV_DIR || path.posix.dirname(p) === ENV_DIR);
            expect(named.filter((p) => !inFolder(p))).toEqual([]);
            double.requests.length = 0;
            expect(bugs).toEqual([]);
            const reported = JSON.stringify([outcomes, outcomes.map(eventFor)]);
            expect(reported).not.toContain(SECRET);
            expect(reported).not.toContain('"tok"');
            outcomes.length = 0;
          },
        ),
        { numRuns: runs },
      );
      expect(hostileAnswers).toBeGreaterThanOrEqual(runs);
    },
    propertyTimeout(runs, 400),
  );
});
