// Sandbox pods on a real node: a kubelet and containerd (built by build.sh, runc from Debian) run the pods that
// the webhook admitted in cluster mode with EnvVarsInjectionPolicy Auto, and deliver-env, as a process, writes
// each claim into the pod through envd's file API. The envd is our double of that API (test/support/
// envd-double.ts, which follows envd's published spec; it is not the real envd), started in the main container
// by the injection config's postStart, as upstream's agent-runtime does. Pods are hostNetwork (there is no CNI
// here), so each one's envd gets a loopback port of its own. What the node is and is not: test/e2e/README.md.
//
// The tests look into the containers from the host, as root: a container's processes are in /proc, with their
// command lines, their environments and, under /proc/<pid>/root, their files.
import { readFileSync, readdirSync, existsSync, statSync } from 'node:fs';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot, startCluster, type TestCluster } from './support/cluster.js';
import { startDeliverProcess, type DeliverProcess } from './support/deliver-process.js';
import { until as pollUntil, type EventItem } from './support/deliver-world.js';
import { prepareNode, startNode, type E2eNode } from './support/e2e-node.js';
import type { Leftovers } from './support/node-host.js';
import { APP_ENTRYPOINT_LINE, IMAGES } from './support/node-images.js';
import { podFromSandbox, type SandboxObject } from './support/sandbox-controller.js';
import { freePort, startWebhookProcess, webhookConfiguration, type WebhookProcess } from './support/webhook-process.js';

const NS = 'e2e-node';
const SANDBOXSET_CRD = path.join(repoRoot, 'test', 'fixtures', 'e2e', 'sandboxset-crd.yaml');
const CONFIG_NS = 'sandbox-system';
const W = ['/bin/bash', '/var/sandbox/run_with_envs.sh'];
const REQUEST = 'agents.kruise.io/init-runtime-request';
const STATUS = 'agents.kruise.io/runtime-injection-status';
const CLAIM_TIMESTAMP = 'agents.kruise.io/claim-timestamp';
const SANDBOX_CLAIMED = 'agents.kruise.io/sandbox-claimed';

/**
 * The webhook's warning for a network probe on a wrapped container under Auto (issue 31, "Operating Auto: say
 * what will break before it breaks"): the whole line as the webhook answers it, spelled here as the node tests
 * expect it, from what they see the kubelet do (src/injection/auto-warnings.ts: readinessProbeWarning,
 * restartingProbeWarning). This is the ONE place that spells it; the webhook answers it only with
 * `serve --warn-unwrapped`, which this file's webhook gets.
 */
const NETWORK_PROBE_WARNING = (container: string, probe: 'readinessProbe' | 'livenessProbe'): string =>
  probe === 'readinessProbe'
    ? `Auto: not Ready until claimed, pool never fills: "${container}" readinessProbe httpGet; use an exec probe`
    : `Auto: restarted until claimed: "${container}" livenessProbe httpGet fails meanwhile; use an exec probe`;

/**
 * Whether `warnings` holds `text` as the webhook answers it in cluster mode: after `Sandbox NS/NAME: `, and cut
 * at kube-apiserver's 120 characters with `...` (src/admission/warnings.ts), so the reason is whole and only the
 * advice at the end may be cut.
 */
function warned(warnings: readonly string[] | undefined, sandbox: string, text: string): boolean {
  const prefix = `Sandbox ${NS}/${sandbox}: `;
  return (warnings ?? []).some((w) => {
    if (!w.startsWith(prefix)) return false;
    const body = w.slice(prefix.length);
    return body === text || (w.length === 120 && body.endsWith('...') && text.startsWith(body.slice(0, -3)));
  });
}

/** Values a careless writer would break; the app must see exactly these. */
const CLAIM_VARS: Record<string, string> = {
  API_KEY: 'sk-node-e2e-0001',
  QUOTED: `it's "quoted" and $HOME and \`id\``,
  MULTI_LINE: 'line one\nline two',
  UNICODE: 'héllo 🌍',
  EMPTY: '',
};
/** Names bash itself sets or exports on the way to exec, not the claim's. */
const SHELL_NAMES = new Set(['_', 'SHLVL', 'PWD', 'OLDPWD']);

/**
 * What a process of uid 1000 (tenant code in E2B's images; `node` in the app image) tries in the env folder,
 * run in the main container through containerd: each attempt prints "<what>: ok", "<what>: denied" (EACCES or
 * EPERM) or its error. The wake FIFO is not written: an open for writing that is let through waits for a reader.
 */
const TENANT_ATTEMPTS = String.raw`
cd /var/sandbox || exit 1
echo "uid $(id -u) gid $(id -g) groups $(id -G)"
try() {
  local what=$1 err
  shift
  if err=$("$@" 2>&1); then
    echo "$what: ok"
  else
    case $err in
      *'Permission denied'* | *'Operation not permitted'*) echo "$what: denied" ;;
      *) echo "$what: $err" ;;
    esac
  fi
}
for f in run_with_envs.sh env.sh .env_ready .env_wake; do
  if [ "$f" != .env_wake ]; then
    try "write $f" bash -c 'echo planted > "$1"' _ "$f"
  fi
  try "replace $f" bash -c 'echo planted > /tmp/planted && mv -f /tmp/planted "$1"' _ "$f"
  try "rename $f" mv "$f" "$f.moved"
  try "remove $f" rm -f "$f"
  try "chmod $f" chmod 666 "$f"
done
try "create planted.sh" bash -c 'echo planted > planted.sh'
try "chmod ." chmod 777 .
`;
const TENANT_UID = 1000;

const APP_LINE = 'app: started';
// $BASHPID rather than $$: the kubelet turns $$ in a command into $.
const APP_COMMAND = [
  '/bin/bash',
  '-c',
  `touch /tmp/app-running; echo "${APP_LINE} as pid $BASHPID"; while :; do sleep 3600; done`,
];
const APP_RUNNING_PROBE = {
  exec: { command: ['test', '-e', '/tmp/app-running'] },
  periodSeconds: 1,
  failureThreshold: 2,
};

type Json = Record<string, unknown>;
interface ContainerStatus {
  name: string;
  containerID?: string;
  restartCount: number;
  ready?: boolean;
  started?: boolean;
  state?: {
    running?: { startedAt: string };
    waiting?: { reason?: string };
    terminated?: { exitCode: number; reason?: string };
  };
  lastState?: { terminated?: { exitCode: number; reason?: string } };
}
interface Pod {
  metadata: { name: string; uid: string; annotations?: Record<string, string> };
  spec: { containers: Json[]; initContainers?: Json[] };
  status?: {
    phase?: string;
    podIP?: string;
    conditions?: { type: string; status: string }[];
    containerStatuses?: ContainerStatus[];
    initContainerStatuses?: ContainerStatus[];
  };
}

let cluster: TestCluster;
let node: E2eNode | undefined;
let webhook: WebhookProcess | undefined;
let deliver: DeliverProcess | undefined;
let configData: Record<string, string>;
let leftAfterStop: Leftovers | undefined;
/** Claim-to-app-start times measured here, printed at the end for docs/benchmark.md. */
const claimToStartMs: number[] = [];

/** deliver-world's poll with the node's own default deadline: images start and pods run on a real kubelet. */
const until = <T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 90_000) =>
  pollUntil(what, probe, timeoutMs);

async function getPod(name: string): Promise<Pod | undefined> {
  const r = await cluster.kubectl(['-n', NS, 'get', 'pod', name, '-o', 'json']);
  return r.code === 0 ? (JSON.parse(r.stdout) as Pod) : undefined;
}

const statusOf = (pod: Pod, container: string): ContainerStatus | undefined =>
  [...(pod.status?.containerStatuses ?? []), ...(pod.status?.initContainerStatuses ?? [])].find(
    (s) => s.name === container,
  );
const isReady = (pod: Pod): boolean =>
  pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;

function untilPod(name: string, what: string, test: (pod: Pod) => boolean, timeoutMs?: number): Promise<Pod> {
  return until(
    `${name}: ${what}`,
    async () => {
      const pod = await getPod(name);
      return pod !== undefined && test(pod) ? pod : undefined;
    },
    timeoutMs,
  );
}

interface SandboxInput {
  name: string;
  main: Json;
  envdPort: number;
  grace?: number;
}

/** A Sandbox (policy Auto, agent-runtime) and its pod as the controller makes it; returns the admission's warnings. */
async function sandboxPod(input: SandboxInput): Promise<{ pod: Pod; warnings: string[] }> {
  const main = {
    imagePullPolicy: 'Never',
    ...input.main,
    env: [...((input.main.env as Json[] | undefined) ?? []), { name: 'ENVD_PORT', value: String(input.envdPort) }],
  };
  const sandbox = JSON.parse(
    await cluster.kubectlOk(['create', '-f', '-', '-o', 'json'], {
      input: JSON.stringify({
        apiVersion: 'agents.kruise.io/v1alpha1',
        kind: 'Sandbox',
        metadata: {
          name: input.name,
          namespace: NS,
          annotations: { 'agents.kruise.io/runtime-url': `http://127.0.0.1:${input.envdPort}` },
        },
        spec: {
          runtimes: [{ name: 'agent-runtime' }],
          envVarsInjectionPolicy: 'Auto',
          template: {
            spec: {
              hostNetwork: true,
              automountServiceAccountToken: false,
              terminationGracePeriodSeconds: input.grace ?? 30,
              containers: [main],
            },
          },
        },
      }),
    }),
  ) as SandboxObject;
  const made = await createPodOf(sandbox);
  // Then, as upstream's controller does, the Sandbox's status names its pod: what deliver-env decides it by.
  await namePod(input.name, made.pod.metadata.uid);
  return made;
}

/** The Sandbox's pod as its controller creates it (a first one, or a new one); with the admission's warnings. */
async function createPodOf(sandbox: SandboxObject): Promise<{ pod: Pod; warnings: string[] }> {
  const r = await cluster.kubectl(['create', '-f', '-', '-o', 'json'], {
    input: JSON.stringify(podFromSandbox(sandbox, { configData })),
  });
  if (r.code !== 0) throw new Error(`pod of ${sandbox.metadata.name} not created: ${r.stderr}`);
  const warnings = r.stderr
    .split('\n')
    .filter((l) => l.startsWith('Warning: '))
    .map((l) => l.slice('Warning: '.length));
  return { pod: JSON.parse(r.stdout) as Pod, warnings };
}

/** What upstream's controller writes once it made the Sandbox's pod: `status.podInfo.podUID`. */
async function namePod(sandbox: string, podUID: string): Promise<void> {
  const status = { podInfo: { podUID } };
  await cluster.kubectlOk([
    ...['-n', NS, 'patch', 'sandbox', sandbox, '--subresource=status', '--type=merge'],
    ...['-p', JSON.stringify({ status })],
  ]);
}

async function claim(sandbox: string, vars: Record<string, string>): Promise<number> {
  await cluster.kubectlOk([
    '-n',
    NS,
    'annotate',
    '--overwrite',
    'sandbox',
    sandbox,
    `${REQUEST}=${JSON.stringify({ envVars: vars, accessToken: 'node-e2e-token' })}`,
    `${CLAIM_TIMESTAMP}=${new Date().toISOString()}`,
  ]);
  // The annotation is stored once kubectl has its answer: the claim is recorded by now.
  return Date.now();
}

/** The host pid of a container's first process, from containerd. */
async function hostPid(status: ContainerStatus | undefined): Promise<number> {
  const id = status?.containerID?.replace(/^containerd:\/\//, '');
  if (id === undefined || node === undefined) throw new Error(`no container id in ${JSON.stringify(status)}`);
  const line = (await node.containerd.ctr(['tasks', 'ls'])).split('\n').find((l) => l.startsWith(`${id} `));
  const pid = Number(line?.trim().split(/\s+/)[1]);
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`no task for container ${id}`);
  return pid;
}

const cmdline = (pid: number): string[] => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(0, -1);
/** The pid a process has in its own pid namespace: the last of NSpid. */
const pidInContainer = (pid: number): number =>
  Number(
    /^NSpid:\s*(.*)$/m
      .exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]
      ?.trim()
      .split(/\s+/)
      .pop(),
  );
function environ(pid: number): Record<string, string> {
  const env: Record<string, string> = {};
  for (const entry of readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')) {
    const eq = entry.indexOf('=');
    if (eq > 0) env[entry.slice(0, eq)] = entry.slice(eq + 1);
  }
  return env;
}
/** What `after` has that `before` did not, less what bash sets itself. */
function added(before: Record<string, string>, after: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(after).filter(([key, value]) => !SHELL_NAMES.has(key) && before[key] !== value),
  );
}

/**
 * When a process started (field 22 of /proc/<pid>/stat, in clock ticks since boot); undefined once it is gone.
 * With its pid, it names one process: a pid the kernel gives again later comes with another start.
 */
function startedAt(pid: number): string | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name, in parentheses, may hold spaces: the fields are counted from after its closing one.
  return stat
    .slice(stat.lastIndexOf(')') + 2)
    .split(' ')
    .at(22 - 3);
}

/** The app the wrapper (host pid `wrapper`) started: its child whose command line is APP_COMMAND. */
function appOf(wrapper: number): number | undefined {
  let children: number[];
  try {
    children = readFileSync(`/proc/${wrapper}/task/${wrapper}/children`, 'utf8').trim().split(/\s+/).map(Number);
  } catch {
    return undefined;
  }
  return children.find((pid) => {
    try {
      return JSON.stringify(cmdline(pid)) === JSON.stringify(APP_COMMAND);
    } catch {
      return false;
    }
  });
}

/** The app's line, with the pid it has in the container: never 1, the wrapper's. */
const APP_STARTED = new RegExp(`^${APP_LINE} as pid ([2-9]|[1-9][0-9]+)$`);

/** The Events deliver-env recorded on a Sandbox (its pod has the same name, and Events of its own). */
async function sandboxEvents(sandbox: string): Promise<EventItem[]> {
  const selector = `involvedObject.kind=Sandbox,involvedObject.name=${sandbox}`;
  const text = await cluster.kubectlOk(['-n', NS, 'get', 'events', '--field-selector', selector, '-o', 'json']);
  return (JSON.parse(text) as { items: EventItem[] }).items;
}

function untilSandboxEvent(sandbox: string, reason: string, test: (e: EventItem) => boolean): Promise<EventItem> {
  return until(`a ${reason} Event on Sandbox ${sandbox}`, async () =>
    (await sandboxEvents(sandbox)).find((e) => e.reason === reason && test(e)),
  );
}

interface WatchEvent {
  type: string;
  object?: Pod;
}

/**
 * Whole JSON documents out of a stream of them, one after another (what `kubectl get --watch -o json` prints):
 * each ends where its outermost brace closes, outside strings.
 */
class JsonStream {
  readonly values: unknown[] = [];
  private text = '';
  private start = -1;
  private depth = 0;
  private inString = false;
  private escaped = false;
  private scanned = 0;

  push(chunk: string): void {
    this.text += chunk;
    for (; this.scanned < this.text.length; this.scanned++) {
      const c = this.text[this.scanned];
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (c === '\\') this.escaped = true;
        else if (c === '"') this.inString = false;
      } else if (c === '"') this.inString = true;
      else if (c === '{') {
        if (this.depth === 0) this.start = this.scanned;
        this.depth++;
      } else if (c === '}') {
        this.depth--;
        if (this.depth === 0) this.values.push(JSON.parse(this.text.slice(this.start, this.scanned + 1)));
      }
    }
    if (this.depth === 0) {
      this.text = '';
      this.scanned = 0;
    }
  }
}

interface LogLine {
  at: Date;
  text: string;
}

/** A container's log as the kubelet keeps it (CRI format: time, stream, tag, text), one file per restart. */
function containerLog(pod: Pod, container: string, restart: number): LogLine[] {
  if (node === undefined) return [];
  const file = path.join(
    node.dir,
    'pod-logs',
    `${NS}_${pod.metadata.name}_${pod.metadata.uid}`,
    container,
    `${restart}.log`,
  );
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => {
      const [at = '', , , ...rest] = l.split(' ');
      return { at: new Date(at), text: rest.join(' ') };
    });
}

/** RFC 3339 with nanoseconds, as CRI logs and containerd write it, in ms with the fraction kept. */
const preciseMs = (stamp: string): number => {
  const m = /^(.*T\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$/.exec(stamp);
  if (m === null) throw new Error(`not an RFC 3339 time: ${stamp}`);
  return Date.parse(`${m[1]}${m[3]}`) + Number(`0${m[2] ?? ''}`) * 1000;
};

async function containerCreatedMs(status: ContainerStatus | undefined): Promise<number> {
  const id = status?.containerID?.replace(/^containerd:\/\//, '') ?? '';
  const info = JSON.parse((await node?.containerd.ctr(['containers', 'info', id])) ?? '{}') as { CreatedAt?: string };
  return preciseMs(info.CreatedAt ?? '');
}

function readInjectionConfig(): Record<string, string> {
  const doc = parseYaml(
    readFileSync(path.join(repoRoot, 'manifests', 'components', 'injection-config', 'injection-config.yaml'), 'utf8'),
  ) as {
    data: Record<string, string>;
  };
  const agentRuntime = JSON.parse(doc.data['agent-runtime'] ?? '{}') as { csiSidecar: Json[] };
  for (const sidecar of agentRuntime.csiSidecar) {
    sidecar.image = IMAGES.agentRuntime;
    sidecar.imagePullPolicy = 'Never';
    // A native sidecar's startupProbe holds the main container back until it passes: its postStart runs
    // envd-run.sh, which the stand-in copies last (test/e2e/node/agent-runtime/entrypoint.sh).
    const envdDir = (sidecar.env as { name: string; value?: string }[] | undefined)?.find((e) => e.name === 'ENVD_DIR');
    sidecar.startupProbe = {
      exec: { command: ['sh', '-c', `test -x ${envdDir?.value ?? '/mnt/envd'}/envd-run.sh`] },
      periodSeconds: 1,
      failureThreshold: 120,
    };
  }
  return { 'agent-runtime': JSON.stringify(agentRuntime) };
}

beforeAll(async () => {
  const prepared = prepareNode();
  try {
    cluster = await startCluster({ apiserverArgs: prepared.apiserverArgs });
  } catch (error) {
    const { restoreHost } = await import('./support/node-host.js');
    restoreHost(prepared.host, prepared.dir);
    throw error;
  }
  await cluster.installSandboxCrd();
  await cluster.kubectlOk(['apply', '-f', SANDBOXSET_CRD]);
  await cluster.ensureNamespace(NS);
  await cluster.ensureNamespace(CONFIG_NS);
  configData = readInjectionConfig();
  await cluster.applyObject({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'sandbox-injection-config', namespace: CONFIG_NS },
    data: configData,
  });
  // --warn-unwrapped: Auto's advice (network probes, containers without command) is answered as warnings.
  webhook = await startWebhookProcess(cluster, {
    extraArgs: ['--wrapper-image', IMAGES.injector, '--warn-unwrapped'],
  });
  await cluster.applyObject(webhookConfiguration('sandbox-injector', webhook.url, webhook.ca.certPem));
  deliver = await startDeliverProcess(cluster, 'node-e2e', [
    // The kubelet reports hostNetwork pods at the node's registered IP, which reaches nothing here (all traffic
    // stays on loopback), while each pod's envd listens on 127.0.0.1: the runtime URL is followed as given. The
    // pod-IP rule itself is tested on the API server (deliver-env.e2e.test.ts).
    '--trust-runtime-url',
    // Every pod here is a hostNetwork one, and every listener on this node is the test's own.
    '--allow-host-network',
    '--lease-namespace',
    CONFIG_NS,
    '--request-timeout',
    '2s',
    // Only a pool's pods are replaced: the one test that makes a pool (a SandboxSet owning its Sandbox).
    '--replace-pool-pods=missing',
  ]);
  node = await startNode(prepared, cluster);
  // kube-apiserver calls a new webhook configuration a moment after it is stored.
  const warm = JSON.parse(
    await cluster.kubectlOk(['create', '-f', '-', '-o', 'json'], {
      input: JSON.stringify({
        apiVersion: 'agents.kruise.io/v1alpha1',
        kind: 'Sandbox',
        metadata: { name: 'warmup', namespace: NS },
        spec: {
          runtimes: [{ name: 'agent-runtime' }],
          template: { spec: { containers: [{ name: 'main', image: IMAGES.app }] } },
        },
      }),
    }),
  ) as SandboxObject;
  await until('the webhook admits Sandbox pods', async () => {
    const r = await cluster.kubectl(['create', '--dry-run=server', '-f', '-', '-o', 'json'], {
      input: JSON.stringify(podFromSandbox(warm, { configData })),
    });
    return r.code === 0 && (JSON.parse(r.stdout) as Pod).metadata.annotations?.[STATUS] !== undefined
      ? true
      : undefined;
  });
}, 1_800_000);

afterAll(async () => {
  await deliver?.stop();
  await webhook?.stop();
  if (node !== undefined && leftAfterStop === undefined) await node.stop();
  await cluster?.stop();
  if (claimToStartMs.length > 0) {
    process.stdout.write(
      `node e2e: claim recorded -> app's first output: ${claimToStartMs.map((ms) => `${ms.toFixed(0)} ms`).join(', ')}\n`,
    );
  }
});

describe('Auto on a real node', () => {
  let podA: Pod;
  let waitingEnv: Record<string, string>;

  it('starts the agent-runtime sidecar and the wrapper installer before the main container', async () => {
    const port = await freePort();
    const { pod } = await sandboxPod({
      name: 'sbx-app',
      envdPort: port,
      main: {
        name: 'main',
        image: IMAGES.app,
        command: APP_COMMAND,
        readinessProbe: APP_RUNNING_PROBE,
        livenessProbe: APP_RUNNING_PROBE,
      },
    });
    expect(pod.spec.initContainers?.map((c) => c.name)).toEqual(
      expect.arrayContaining(['agent-runtime', 'sandbox-env-wrapper']),
    );
    podA = await untilPod('sbx-app', 'main running', (p) => statusOf(p, 'main')?.state?.running !== undefined, 300_000);
    const sidecar = statusOf(podA, 'agent-runtime');
    expect(sidecar?.state?.running).toBeDefined();
    expect(statusOf(podA, 'sandbox-env-wrapper')?.state?.terminated?.exitCode).toBe(0);
    // The sidecar's entrypoint had copied envd before containerd even created the main container.
    const copied = containerLog(podA, 'agent-runtime', 0).find((l) => l.text.includes('envd stand-in copied'));
    expect(copied).toBeDefined();
    const mainCreated = await containerCreatedMs(statusOf(podA, 'main'));
    const copiedLine =
      readFileSync(
        path.join(node?.dir ?? '', 'pod-logs', `${NS}_sbx-app_${podA.metadata.uid}`, 'agent-runtime', '0.log'),
        'utf8',
      )
        .split('\n')
        .find((l) => l.includes('envd stand-in copied')) ?? '';
    expect(preciseMs(copiedLine.split(' ')[0] ?? '')).toBeLessThan(mainCreated);
  });

  it('is Ready while unclaimed: its exec probes are wrapped, and would fail unwrapped', async () => {
    const main = podA.spec.containers[0] as {
      readinessProbe: { exec: { command: string[] } };
      livenessProbe: { exec: { command: string[] } };
      command: string[];
    };
    expect(main.command).toEqual([...W, '--']);
    expect(main.readinessProbe.exec.command).toEqual([...W, '--probe', '--', 'test', '-e', '/tmp/app-running']);
    expect(main.livenessProbe.exec.command).toEqual([...W, '--probe', '--', 'test', '-e', '/tmp/app-running']);
    podA = await untilPod('sbx-app', 'Ready', isReady);
    expect(statusOf(podA, 'main')?.restartCount).toBe(0);
  });

  it('has not started the app: PID 1 of the main container is run_with_envs.sh, waiting', async () => {
    const pid = await hostPid(statusOf(podA, 'main'));
    expect(pidInContainer(pid)).toBe(1);
    expect(cmdline(pid).slice(0, 3)).toEqual([...W, '--']);
    expect(existsSync(`/proc/${pid}/root/tmp/app-running`)).toBe(false);
    expect(containerLog(podA, 'main', 0).filter((l) => l.text.startsWith(APP_LINE))).toEqual([]);
    // envd, started by postStart, comes up inside the main container: the pod is Ready from the wrapped exec
    // probe alone, which passes at once while unclaimed, so envd's line may come after it.
    await until('envd listening in the main container', () =>
      containerLog(podA, 'main', 0).some((l) => l.text.startsWith('envd stand-in listening')) ? true : undefined,
    );
    waitingEnv = environ(pid);
  });

  it("a claim starts the app, as the wrapper's child, with exactly the claim's variables", async () => {
    const pid = await hostPid(statusOf(podA, 'main'));
    const recorded = await claim('sbx-app', CLAIM_VARS);
    const first = await until('the app printed', () =>
      containerLog(podA, 'main', 0).find((l) => l.text.startsWith(APP_LINE)),
    ).catch(async (error: unknown) => {
      // What deliver-env saw and did, and the address the kubelet reported: the first things to look at.
      const pod = await getPod('sbx-app');
      const tail = JSON.stringify(deliver?.logs.slice(-15));
      throw new Error(`${String(error)}; pod IP ${pod?.status?.podIP}; deliver-env: ${tail}`, { cause: error });
    });
    expect(first.text).toMatch(APP_STARTED);
    claimToStartMs.push(first.at.getTime() - recorded);
    process.stdout.write(`node e2e: claim recorded -> app's first output ${first.at.getTime() - recorded} ms\n`);
    // The wrapper stays PID 1, the app's parent, to end it when the claim ends.
    expect(pidInContainer(pid)).toBe(1);
    expect(cmdline(pid)).toEqual([...W, '--', ...APP_COMMAND]);
    const app = await until('the app, a child of the wrapper', () => appOf(pid));
    expect(added(waitingEnv, environ(app))).toEqual(CLAIM_VARS);
    expect(readFileSync(`/proc/${pid}/root/var/sandbox/.env_ready`, 'utf8')).toMatch(/^sha256:/);
    podA = await untilPod('sbx-app', 'Ready after the claim', isReady);
  });

  it('a killed app restarts its container, and the app starts again at once with the same variables', async () => {
    const pid = await hostPid(statusOf(podA, 'main'));
    const app = appOf(pid);
    if (app === undefined) throw new Error(`no app under the wrapper, pid ${pid}`);
    process.kill(app, 'SIGKILL');
    podA = await untilPod('sbx-app', 'restarted and running', (p) => {
      const s = statusOf(p, 'main');
      return s?.restartCount === 1 && s.state?.running !== undefined;
    });
    // The wrapper exits with its app's status, as the shell would: 128 + SIGKILL.
    expect(statusOf(podA, 'main')?.lastState?.terminated?.exitCode).toBe(137);
    const line = await until('the restarted app printed', () =>
      containerLog(podA, 'main', 1).find((l) => l.text.startsWith(APP_LINE)),
    );
    expect(line.text).toMatch(APP_STARTED);
    const again = await hostPid(statusOf(podA, 'main'));
    expect(again).not.toBe(pid);
    const restarted = await until('the restarted app, a child of the wrapper', () => appOf(again));
    expect(added(waitingEnv, environ(restarted))).toEqual(CLAIM_VARS);
  });

  it("uid 1000 in the main container cannot replace, move or remove the wrapper's script, env.sh or .env_ready", async () => {
    const status = statusOf(podA, 'main');
    const pid = await hostPid(status);
    const folder = `/proc/${pid}/root/var/sandbox`;
    const before = {
      script: readFileSync(`${folder}/run_with_envs.sh`, 'utf8'),
      env: readFileSync(`${folder}/env.sh`, 'utf8'),
      ready: readFileSync(`${folder}/.env_ready`, 'utf8'),
    };
    // The script the installer copied (from this tree, by the image's install-wrapper, as uid 65532), now root's.
    expect(before.script).toBe(readFileSync(path.join(repoRoot, 'src', 'wrapper', 'run_with_envs.sh'), 'utf8'));
    const id = status?.containerID?.replace(/^containerd:\/\//, '') ?? '';
    const out = await node?.containerd.ctr([
      'tasks',
      'exec',
      '--exec-id',
      `tenant-${Date.now()}`,
      '--user',
      `${TENANT_UID}:${TENANT_UID}`,
      id,
      '/bin/bash',
      '-c',
      TENANT_ATTEMPTS,
    ]);
    const lines = (out ?? '').trim().split('\n');
    expect(lines[0]).toBe(`uid ${TENANT_UID} gid ${TENANT_UID} groups ${TENANT_UID}`);
    const attempts = lines.slice(1);
    expect(attempts.length).toBe(21);
    expect(attempts).toEqual(attempts.map((line) => line.replace(/: .*$/s, ': denied')));
    // Nothing changed, and what the wrapper made of the folder is what keeps it so.
    expect({
      script: readFileSync(`${folder}/run_with_envs.sh`, 'utf8'),
      env: readFileSync(`${folder}/env.sh`, 'utf8'),
      ready: readFileSync(`${folder}/.env_ready`, 'utf8'),
    }).toEqual(before);
    const mode = (file: string) => {
      const st = statSync(file);
      return [st.uid, st.gid, st.mode & 0o7777];
    };
    expect(mode(folder)).toEqual([0, 0, 0o1755]);
    expect(mode(`${folder}/run_with_envs.sh`)).toEqual([0, 0, 0o555]);
    expect(mode(`${folder}/.env_wake`)).toEqual([0, 0, 0o600]);
    // The wrapped exec probes still pass: the pod stays Ready.
    podA = await untilPod('sbx-app', 'Ready after the attempts', isReady);
  });

  it('deleting a waiting pod ends it at SIGTERM, long before its grace period', async () => {
    const grace = 600;
    await sandboxPod({
      name: 'sbx-delete',
      envdPort: await freePort(),
      grace,
      main: { name: 'main', image: IMAGES.app, command: APP_COMMAND },
    });
    const running = await untilPod(
      'sbx-delete',
      'main running',
      (p) => statusOf(p, 'main')?.state?.running !== undefined,
      300_000,
    );
    const pid = await hostPid(statusOf(running, 'main'));
    expect(cmdline(pid).slice(0, 3)).toEqual([...W, '--']);
    const watcher = spawn(
      path.join(cluster.binDir, 'kubectl'),
      [
        '--kubeconfig',
        cluster.kubeconfigPath,
        '-n',
        NS,
        'get',
        'pod',
        'sbx-delete',
        '--watch',
        '--output-watch-events',
        '-o',
        'json',
      ],
      { stdio: ['ignore', 'pipe', 'ignore'] },
    );
    const events = new JsonStream();
    watcher.stdout.on('data', (chunk: Buffer) => events.push(chunk.toString('utf8')));
    try {
      // The watch has the pod before it is deleted, so every change after that is in it.
      await until('the watch saw the pod', () => (events.values.length > 0 ? true : undefined));
      await cluster.kubectlOk(['-n', NS, 'delete', 'pod', 'sbx-delete', '--wait=false']);
      // A deadline far inside the grace period: a pod that ignored SIGTERM would still be there.
      await until('the wrapper exited', () => (existsSync(`/proc/${pid}`) ? undefined : true), (grace / 4) * 1000);
      await until(
        'the pod is gone',
        async () => ((await getPod('sbx-delete')) === undefined ? true : undefined),
        (grace / 4) * 1000,
      );
      await until('the watch saw the pod deleted', () =>
        events.values.some((e) => (e as WatchEvent).type === 'DELETED') ? true : undefined,
      );
    } finally {
      watcher.kill();
    }
    // The main container's terminated states, as the kubelet reported them before the pod went: the wrapper
    // installer (an init container) exited 0 long before, and is not asked about.
    const codes = (events.values as WatchEvent[])
      .map((e) => e.object?.status?.containerStatuses?.find((s) => s.name === 'main')?.state?.terminated?.exitCode)
      .filter((code): code is number => code !== undefined);
    process.stdout.write(`node e2e: exit codes of the deleted pod's main container: ${JSON.stringify(codes)}\n`);
    // The kubelet writes the terminated state before it deletes the pod; SIGTERM ends the wrapper with 143.
    expect(codes.length).toBeGreaterThan(0);
    expect(codes.every((c) => c === 143)).toBe(true);
  });

  it('a main container without command is not wrapped, still gets its env folder, and envd writes into it', async () => {
    const envdPort = await freePort();
    const envdUrl = `http://127.0.0.1:${envdPort}`;
    const { pod, warnings } = await sandboxPod({
      name: 'sbx-entrypoint',
      envdPort,
      main: { name: 'main', image: IMAGES.app },
    });
    expect(JSON.parse(pod.metadata.annotations?.[STATUS] ?? '{}')).toMatchObject({ wrapped: [] });
    const noCommand = `Auto: starts unclaimed, without the claim's env: "main" has no command to wrap; give it one`;
    expect(warned(warnings, 'sbx-entrypoint', noCommand), JSON.stringify(warnings)).toBe(true);
    const running = await untilPod(
      'sbx-entrypoint',
      'main running',
      (p) => statusOf(p, 'main')?.state?.running !== undefined,
      300_000,
    );
    await until('the image entrypoint printed', () =>
      containerLog(running, 'main', 0).find((l) => l.text === APP_ENTRYPOINT_LINE),
    );
    const pid = await hostPid(statusOf(running, 'main'));
    expect(existsSync(`/proc/${pid}/root/var/sandbox`)).toBe(true);
    // deliver-env writes only where a wrapped command waits, so the write here is the agent's own, through the
    // envd that postStart started in this container.
    const form = new FormData();
    form.append('file', new Blob(['written-by-envd\n']), 'note.txt');
    const answer = await until('envd answers the upload', async () => {
      const r = await fetch(`${envdUrl}/files?path=/var/sandbox/note.txt&username=root`, {
        method: 'POST',
        body: form,
      }).catch(() => undefined);
      return r?.status === 200 ? r : undefined;
    });
    expect(answer.status).toBe(200);
    expect(readFileSync(`/proc/${pid}/root/var/sandbox/note.txt`, 'utf8')).toBe('written-by-envd\n');
  });

  describe('network probes on a wrapped container, unclaimed', () => {
    const warnings: Record<string, string[]> = {};

    it('an httpGet readiness probe: the pod never becomes Ready', async () => {
      const port = await freePort();
      const created = await sandboxPod({
        name: 'sbx-http-ready',
        envdPort: await freePort(),
        main: {
          name: 'main',
          image: IMAGES.app,
          command: APP_COMMAND,
          readinessProbe: { httpGet: { path: '/', port, host: '127.0.0.1' }, periodSeconds: 1 },
        },
      });
      warnings.readinessProbe = created.warnings;
      const pod = await untilPod(
        'sbx-http-ready',
        'main running',
        (p) => statusOf(p, 'main')?.state?.running !== undefined,
        300_000,
      );
      expect((pod.spec.containers[0] as { readinessProbe: Json }).readinessProbe).toMatchObject({ httpGet: { port } });
      // What the kubelet does: the probe fails, with nothing listening while the wrapper waits.
      await until('a failed readiness probe', async () => {
        const events = JSON.parse(
          await cluster.kubectlOk([
            '-n',
            NS,
            'get',
            'events',
            '--field-selector',
            'involvedObject.name=sbx-http-ready',
            '-o',
            'json',
          ]),
        ) as { items: { reason: string; message: string; count?: number }[] };
        return events.items.some(
          (e) => e.reason === 'Unhealthy' && e.message.startsWith('Readiness probe failed') && (e.count ?? 1) >= 3,
        )
          ? true
          : undefined;
      });
      const after = await getPod('sbx-http-ready');
      expect(after !== undefined && isReady(after)).toBe(false);
      expect(statusOf(after as Pod, 'main')?.restartCount).toBe(0);
    });

    it('an httpGet liveness probe: the container is restarted into CrashLoopBackOff', async () => {
      const port = await freePort();
      const created = await sandboxPod({
        name: 'sbx-http-live',
        envdPort: await freePort(),
        main: {
          name: 'main',
          image: IMAGES.app,
          command: APP_COMMAND,
          livenessProbe: { httpGet: { path: '/', port, host: '127.0.0.1' }, periodSeconds: 1, failureThreshold: 1 },
        },
      });
      warnings.livenessProbe = created.warnings;
      const pod = await untilPod(
        'sbx-http-live',
        'CrashLoopBackOff',
        (p) => statusOf(p, 'main')?.state?.waiting?.reason === 'CrashLoopBackOff',
        180_000,
      );
      expect(statusOf(pod, 'main')?.restartCount).toBeGreaterThanOrEqual(1);
    });

    it("the webhook's warnings name the container and the probe, and say what the node does", () => {
      const ready = NETWORK_PROBE_WARNING('main', 'readinessProbe');
      expect(warned(warnings.readinessProbe, 'sbx-http-ready', ready), JSON.stringify(warnings)).toBe(true);
      const live = NETWORK_PROBE_WARNING('main', 'livenessProbe');
      expect(warned(warnings.livenessProbe, 'sbx-http-live', live), JSON.stringify(warnings)).toBe(true);
    });
  });

  describe("recycle: the last claim's processes end with a restart, and the next claim starts its own app", () => {
    // docs/deliver-env.md, "Recycle: what a pod keeps": clearing marks the pod recycled and wakes the wrapper,
    // which ends its app and exits; the kubelet restarts the container into a new wait, with every process of
    // the claim gone; the next claim goes into the same pod once the restarted container runs.
    const SANDBOX = 'sbx-recycle';
    const TENANT_A: Record<string, string> = { TENANT: 'a', A_SECRET: 'sk-tenant-a-0001' };
    const TENANT_B: Record<string, string> = { TENANT: 'b', B_SECRET: 'sk-tenant-b-0002' };
    /** What tenant A's claim started: its app, and a process of its own as uid 1000 (as through envd). */
    const ORPHAN_COMMAND = ['/bin/bash', '-c', 'exec -a tenant-a-leftover sleep 3600'];
    let podA: Pod;
    let served: {
      wrapper: number;
      app: { pid: number; started: string };
      leftover: { pid: number; started: string };
      restart: number;
      waitingEnv: Record<string, string>;
    };

    /**
     * The pod `uid` once its main container runs with envd up, at a restart after `after`: the restart whose log
     * says envd listens. The kubelet may start the main container while the agent-runtime sidecar still copies
     * envd-run.sh (nothing waits for the copy); its postStart then fails and the kubelet restarts the container
     * (FailedPostStartHook), so the restart to look at is the one whose postStart started envd.
     */
    function untilEnvdUp(uid: string, after = -1): Promise<{ pod: Pod; restart: number }> {
      return until(
        `${SANDBOX} (${uid}): main running after restart ${after}, envd listening`,
        async () => {
          const pod = await getPod(SANDBOX);
          const main = pod === undefined ? undefined : statusOf(pod, 'main');
          if (pod?.metadata.uid !== uid || main?.state?.running === undefined || main.restartCount <= after)
            return undefined;
          const log = containerLog(pod, 'main', main.restartCount);
          return log.some((l) => l.text.startsWith('envd stand-in listening'))
            ? { pod, restart: main.restartCount }
            : undefined;
        },
        150_000,
      );
    }

    /** The main container's PID 1 is the wrapper, waiting: no app started. */
    async function wrapperWaits(pod: Pod, restart: number): Promise<{ pid: number; env: Record<string, string> }> {
      const pid = await hostPid(statusOf(pod, 'main'));
      expect(pidInContainer(pid)).toBe(1);
      expect(cmdline(pid)).toEqual([...W, '--', ...APP_COMMAND]);
      expect(appOf(pid)).toBeUndefined();
      expect(existsSync(`/proc/${pid}/root/tmp/app-running`)).toBe(false);
      expect(containerLog(pod, 'main', restart).filter((l) => l.text.startsWith(APP_LINE))).toEqual([]);
      return { pid, env: environ(pid) };
    }

    /** The one process on the host whose command line is `command`, with its start. */
    function processOf(command: readonly string[]): { pid: number; started: string } | undefined {
      for (const entry of readdirSync('/proc')) {
        const pid = Number(entry);
        if (!Number.isInteger(pid)) continue;
        try {
          if (JSON.stringify(cmdline(pid)) !== JSON.stringify(command)) continue;
        } catch {
          continue;
        }
        const started = startedAt(pid);
        if (started !== undefined) return { pid, started };
      }
      return undefined;
    }

    const folderOf = (pid: number): string => `/proc/${pid}/root/var/sandbox`;
    const claimFiles = (pid: number): string[] =>
      ['env.sh', '.env_ready'].filter((f) => existsSync(`${folderOf(pid)}/${f}`));
    const gone = (p: { pid: number; started: string }): boolean => startedAt(p.pid) !== p.started;

    it("tenant A's claim starts the app with A's variables, and A starts a process of its own", async () => {
      const { pod: created } = await sandboxPod({
        name: SANDBOX,
        envdPort: await freePort(),
        grace: 3,
        main: { name: 'main', image: IMAGES.app, command: APP_COMMAND },
      });
      const up = await untilEnvdUp(created.metadata.uid);
      podA = up.pod;
      const waiting = await wrapperWaits(podA, up.restart);
      await claim(SANDBOX, TENANT_A);
      const first = await until("A's app printed", () =>
        containerLog(podA, 'main', up.restart).find((l) => l.text.startsWith(APP_LINE)),
      );
      expect(first.text).toMatch(APP_STARTED);
      const app = await until("A's app, a child of the wrapper", () => appOf(waiting.pid));
      expect(added(waiting.env, environ(app))).toEqual(TENANT_A);
      // Tenant code as uid 1000, as envd's commands.run starts it: not a child of the wrapper.
      const id = statusOf(podA, 'main')?.containerID?.replace(/^containerd:\/\//, '') ?? '';
      await node?.containerd.ctr([
        ...['tasks', 'exec', '--detach', '--exec-id', `tenant-a-${Date.now()}`],
        ...['--user', `${TENANT_UID}:${TENANT_UID}`, id, ...ORPHAN_COMMAND],
      ]);
      const leftover = await until("A's own process", () => processOf(['tenant-a-leftover', '3600']));
      const appStarted = startedAt(app);
      if (appStarted === undefined) throw new Error(`A's app, pid ${app}, is gone`);
      served = {
        wrapper: waiting.pid,
        app: { pid: app, started: appStarted },
        leftover,
        restart: up.restart,
        waitingEnv: waiting.env,
      };
    }, 300_000);

    it("a recycle clears A's files, ends A's app and A's own process, and the wrapper waits again", async () => {
      // Recycle, as upstream's resetMetadataForPool does it, in one update: the label back to false, the claim's
      // annotations gone. The pod stays.
      const reset = {
        metadata: { labels: { [SANDBOX_CLAIMED]: 'false' }, annotations: { [REQUEST]: null, [CLAIM_TIMESTAMP]: null } },
      };
      await cluster.kubectlOk(['-n', NS, 'patch', 'sandbox', SANDBOX, '--type=merge', '-p', JSON.stringify(reset)]);
      const cleared = await untilSandboxEvent(SANDBOX, 'EnvCleared', (e) =>
        (e.message ?? '').includes(podA.metadata.uid),
      );
      expect(cleared.type).toBe('Normal');
      // The wrapper ended its app and exited 75; the kubelet restarted the container, in the same pod.
      const up = await untilEnvdUp(podA.metadata.uid, served.restart);
      expect(statusOf(up.pod, 'main')?.lastState?.terminated?.exitCode).toBe(75);
      expect(containerLog(up.pod, 'main', served.restart).some((l) => l.text.includes('the claim ended'))).toBe(true);
      await until("A's app is gone", () => (gone(served.app) ? true : undefined));
      await until("A's own process is gone", () => (gone(served.leftover) ? true : undefined));
      // A new wait, with none of the claim's files, and no process of A's anywhere.
      const waiting = await wrapperWaits(up.pod, up.restart);
      expect(waiting.pid).not.toBe(served.wrapper);
      expect(claimFiles(waiting.pid)).toEqual([]);
      expect(processOf(['tenant-a-leftover', '3600'])).toBeUndefined();
      expect(Object.values(environ(waiting.pid))).not.toContain(TENANT_A.A_SECRET);
      podA = up.pod;
      served = { ...served, wrapper: waiting.pid, restart: up.restart, waitingEnv: waiting.env };
    });

    it("tenant B's claim into the same pod starts B's app alone", async () => {
      await claim(SANDBOX, TENANT_B);
      const first = await until("B's app printed", () =>
        containerLog(podA, 'main', served.restart).find((l) => l.text.startsWith(APP_LINE)),
      );
      expect(first.text).toMatch(APP_STARTED);
      const app = await until("B's app, a child of the wrapper", () => appOf(served.wrapper));
      const env = environ(app);
      expect(added(served.waitingEnv, env)).toEqual(TENANT_B);
      expect(env.A_SECRET).toBeUndefined();
      expect(env.TENANT).toBe('b');
      const delivered = await untilSandboxEvent(SANDBOX, 'EnvDelivered', (e) =>
        (e.message ?? '').includes(podA.metadata.uid),
      );
      expect(delivered.type).toBe('Normal');
      // The same pod, and the mark gone with the delivery: nothing ends B's app.
      const pod = await getPod(SANDBOX);
      expect(pod?.metadata.uid).toBe(podA.metadata.uid);
      expect(existsSync(`${folderOf(served.wrapper)}/.env_recycled`)).toBe(false);
      expect((await sandboxEvents(SANDBOX)).filter((e) => e.reason === 'EnvPodRecycled')).toEqual([]);
    });
  });

  describe('a pool pod admitted without its runtimes', () => {
    // docs/deliver-env.md, "Pool pods: missing and stale": a pre-warmed pod the webhook never saw (failurePolicy
    // Ignore while it was down) is Ready and looks healthy, but nothing in it waits for a claim. deliver-env
    // (--replace-pool-pods=missing) deletes it; the pool's controller, played here by the test, makes the next
    // pod through the webhook, and a claim of it starts its app with the claim's variables.
    const POOL = 'pool-node';
    const SANDBOX = 'sbx-pool';
    const VARS: Record<string, string> = { POOL_TENANT: 'c', C_SECRET: 'sk-pool-0003' };

    /** Creates a pod of the Sandbox as a dry run: whether the webhook answered it (it records its status). */
    async function webhookAnswers(sandbox: SandboxObject): Promise<'webhook' | 'admitted without' | 'refused'> {
      const probe = podFromSandbox(sandbox, { configData });
      (probe.metadata as { name: string }).name = `${SANDBOX}-probe`;
      const r = await cluster.kubectl(['create', '--dry-run=server', '-f', '-', '-o', 'json'], {
        input: JSON.stringify(probe),
      });
      if (r.code !== 0) return 'refused';
      return (JSON.parse(r.stdout) as Pod).metadata.annotations?.[STATUS] === undefined
        ? 'admitted without'
        : 'webhook';
    }

    it('is reported missing and replaced; the pod after it waits, Ready, and a claim starts its app', async () => {
      if (webhook === undefined) throw new Error('no webhook');
      const port = await freePort();
      const set = JSON.parse(
        await cluster.kubectlOk(['-n', NS, 'create', '-o', 'json', '-f', '-'], {
          input: JSON.stringify({
            apiVersion: 'agents.kruise.io/v1alpha1',
            kind: 'SandboxSet',
            metadata: { name: POOL, namespace: NS },
            spec: { replicas: 1, runtimes: [{ name: 'agent-runtime' }] },
          }),
        }),
      ) as { metadata: { uid: string } };
      const sandbox = JSON.parse(
        await cluster.kubectlOk(['create', '-f', '-', '-o', 'json'], {
          input: JSON.stringify({
            apiVersion: 'agents.kruise.io/v1alpha1',
            kind: 'Sandbox',
            metadata: {
              name: SANDBOX,
              namespace: NS,
              annotations: { 'agents.kruise.io/runtime-url': `http://127.0.0.1:${port}` },
              ownerReferences: [
                {
                  apiVersion: 'agents.kruise.io/v1alpha1',
                  kind: 'SandboxSet',
                  name: POOL,
                  uid: set.metadata.uid,
                  controller: true,
                },
              ],
            },
            spec: {
              runtimes: [{ name: 'agent-runtime' }],
              envVarsInjectionPolicy: 'Auto',
              template: {
                spec: {
                  hostNetwork: true,
                  automountServiceAccountToken: false,
                  terminationGracePeriodSeconds: 2,
                  containers: [
                    {
                      name: 'main',
                      image: IMAGES.app,
                      imagePullPolicy: 'Never',
                      command: APP_COMMAND,
                      readinessProbe: APP_RUNNING_PROBE,
                      env: [{ name: 'ENVD_PORT', value: String(port) }],
                    },
                  ],
                },
              },
            },
          }),
        }),
      ) as SandboxObject;
      const webhookConfig = (failurePolicy: 'Fail' | 'Ignore') =>
        webhookConfiguration('sandbox-injector', webhook?.url ?? '', webhook?.ca.certPem, failurePolicy);

      // The webhook goes away while its configuration ignores failures: the pool's pod is made without it.
      await webhook.stop();
      await cluster.applyObject(webhookConfig('Ignore'));
      await until('pods admitted without the webhook', async () =>
        (await webhookAnswers(sandbox)) === 'admitted without' ? true : undefined,
      );
      const { pod: first } = await createPodOf(sandbox);
      await namePod(SANDBOX, first.metadata.uid);
      expect(first.metadata.annotations?.[STATUS]).toBeUndefined();
      await webhook.start();
      await cluster.applyObject(webhookConfig('Fail'));
      await until('the webhook answers again', async () =>
        (await webhookAnswers(sandbox)) === 'webhook' ? true : undefined,
      );

      // Reported, then replaced: deliver-env deletes the pod, and the pool's controller makes the next.
      const missing = await untilSandboxEvent(SANDBOX, 'PoolPodMissing', () => true);
      expect(missing.message).toContain(`pod ${first.metadata.uid} is missing its runtimes: policy Auto`);
      const replaced = await untilSandboxEvent(SANDBOX, 'PoolPodReplaced', () => true);
      expect(replaced.message).toContain(`deleted pod ${first.metadata.uid} (missing: `);
      await until('the missing pod is gone', async () => ((await getPod(SANDBOX)) === undefined ? true : undefined));
      const stored = JSON.parse(
        await cluster.kubectlOk(['-n', NS, 'get', 'sandbox', SANDBOX, '-o', 'json']),
      ) as SandboxObject;
      const { pod: next } = await createPodOf(stored);
      await namePod(SANDBOX, next.metadata.uid);
      expect(JSON.parse(next.metadata.annotations?.[STATUS] ?? '{}')).toMatchObject({
        present: ['agent-runtime'],
        wrapped: ['main'],
        revision: expect.stringMatching(/^sha256:/) as unknown,
      });

      // It runs, Ready while unclaimed, its app not started: the wrapper waits.
      const ready = await untilPod(
        SANDBOX,
        'Ready',
        (p) => p.metadata.uid === next.metadata.uid && isReady(p),
        300_000,
      );
      const restart = statusOf(ready, 'main')?.restartCount ?? 0;
      await until('envd listening in the new pod', () =>
        containerLog(ready, 'main', restart).some((l) => l.text.startsWith('envd stand-in listening'))
          ? true
          : undefined,
      );
      const pid = await hostPid(statusOf(ready, 'main'));
      expect(cmdline(pid)).toEqual([...W, '--', ...APP_COMMAND]);
      expect(containerLog(ready, 'main', restart).filter((l) => l.text.startsWith(APP_LINE))).toEqual([]);
      const waiting = environ(pid);

      await claim(SANDBOX, VARS);
      const started = await until('the app printed', () =>
        containerLog(ready, 'main', restart).find((l) => l.text.startsWith(APP_LINE)),
      );
      expect(started.text).toMatch(APP_STARTED);
      const app = await until('the app, a child of the wrapper', () => appOf(pid));
      expect(added(waiting, environ(app))).toEqual(VARS);
    }, 900_000);
  });

  it('stops, and leaves no process, mount, cgroup, path or kernel setting behind', async () => {
    if (node === undefined) throw new Error('no node');
    await deliver?.stop();
    leftAfterStop = await node.stop();
    expect(leftAfterStop).toEqual({ processes: [], mounts: [], cgroups: [], paths: [], kernel: {} });
    expect(node.kernelRestores()).toBeGreaterThanOrEqual(1);
  });
});
