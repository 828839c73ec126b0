/**
 * What a Sandbox and its pod ask of delivery, read purely: no I/O. The decision is one of
 *
 * - wait: nothing can be done until something changes (no pod, no wrapped container, no address yet);
 * - unclaimed: the pod lives but no claim is on it (a pool's sandbox, or one recycled): files of an earlier
 *   claim must go;
 * - refused: the Sandbox asks for something this controller will not do (a bad variable name, a runtime URL
 *   that points elsewhere than the pod, TLS without a bundle), with the Event reason that says which;
 * - deliver: the exact bytes to write, and the one endpoint of the one pod they are for.
 *
 * Every decision carries `inputs`, a digest of everything it was made from, so that "has anything changed
 * since?" is one comparison and never a fingerprint kept in step by hand.
 *
 * The right pod: the address is the pod's own `status.podIP`, from the pod cache. The Sandbox's
 * `status.podInfo.podIP` is used only when its `podUID` is this pod's UID: after a pause and resume it still
 * names the deleted pod, whose IP may by then belong to another tenant's sandbox. A runtime URL annotation is
 * followed only when its host is that address, unless the operator trusts them (`--trust-runtime-url`).
 *
 * No value of a variable, and no token, ever appears in a reason.
 */
import { createHash } from 'node:crypto';
import type { Agent as HttpsAgent } from 'node:https';
import { isIP } from 'node:net';
import { EnvFileError } from '../envfile/errors.js';
import { parseEnvJson } from '../envfile/parse-env-json.js';
import { renderEnvFile } from '../envfile/render-env-file.js';
import { recordedStatus } from '../injection/status.js';
import type { Pod } from '../injection/index.js';

export const INIT_RUNTIME_REQUEST = 'agents.kruise.io/init-runtime-request';
export const RUNTIME_URL = 'agents.kruise.io/runtime-url';
export const LEGACY_ENVD_URL = 'e2b.agents.kruise.io/envd-url';
export const RUNTIME_ACCESS_TOKEN = 'agents.kruise.io/runtime-access-token';
export const LEGACY_ACCESS_TOKEN = 'e2b.agents.kruise.io/envd-access-token';
export const CLAIM_TIMESTAMP = 'agents.kruise.io/claim-timestamp';
export const RUNTIME_TLS_PORT = 'agents.kruise.io/runtime-tls-port';
export const SANDBOX_CLAIMED = 'agents.kruise.io/sandbox-claimed';
/** The name upstream's runtime certificate is verified against: the pod IP is dialled, this name is checked. */
export const RUNTIME_TLS_SERVER_NAME = 'agentruntime.sandbox.agents.kruise.io';

/** The Sandbox fields delivery reads; everything else of the object is ignored (and stripped from the cache). */
export interface DeliverySandbox {
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  status?: { podInfo?: { podIP?: unknown; podUID?: unknown } };
}

/** The pod as delivery reads it: the injection's shape, whose `status` is read as unknown. */
export type DeliveryPod = Pod;

/** The pod's own IP as its status reports it (kubelet sets it once the sandbox runs). */
function ownIp(pod: DeliveryPod): unknown {
  const status = pod.status;
  return status !== null && typeof status === 'object' ? (status as { podIP?: unknown }).podIP : undefined;
}

/** How the runtime is spoken to: plain HTTP, or HTTPS through an agent that verifies RUNTIME_TLS_SERVER_NAME. */
export type RuntimeTls =
  { kind: 'none' } | { kind: 'ok'; agent: HttpsAgent; version: string } | { kind: 'broken'; reason: string };

export interface RuntimeEndpoint {
  /** Base URL of the pod's envd, without a trailing slash. */
  url: string;
  /** Set for a TLS runtime: the agent that verifies it (and presents the client certificate). */
  tlsAgent: HttpsAgent | undefined;
  /** Sent as X-Access-Token; undefined sends none. */
  accessToken: string | undefined;
}

export interface DeliveryTarget {
  podUid: string;
  endpoint: RuntimeEndpoint;
  /** The whole of env.sh, as `env-file` renders it. */
  content: string;
  /** What .env_ready holds: names this content, so a later look tells whether it was delivered. */
  marker: string;
  variableCount: number;
  /** Claimed without a request (skip-init-runtime): the files say "no claim variables". */
  empty: boolean;
  /** The claim's time from `claim-timestamp`, ms since the epoch (upstream writes whole seconds). */
  claimedAtMs: number | undefined;
}

export type RefusalReason = 'EnvRequestRefused' | 'RuntimeUrlRefused' | 'RuntimeTlsUnconfigured';

export type ClaimDecision = { inputs: string } & (
  | { kind: 'wait'; why: 'no-pod' | 'not-wrapped' | 'no-address' }
  | { kind: 'unclaimed'; podUid: string; endpoint: RuntimeEndpoint }
  | { kind: 'refused'; podUid: string; event: RefusalReason; reason: string }
  | { kind: 'deliver'; target: DeliveryTarget }
);

export interface ClaimSettings {
  /** The port of envd when only the pod IP is known. */
  runtimePort: number;
  /** Follow runtime URL annotations whatever their host (an operator's choice, off by default). */
  trustRuntimeUrl: boolean;
  tls: RuntimeTls;
}

/** The largest request annotation read; kube-apiserver caps all annotations at 256 KiB together. */
const MAX_REQUEST_CHARS = 256 * 1024;

export function claimDecision(
  sandbox: DeliverySandbox,
  pod: DeliveryPod | undefined,
  settings: ClaimSettings,
): ClaimDecision {
  const annotations = sandbox.metadata?.annotations ?? {};
  const inputs = inputsOf(sandbox, pod, settings);
  if (pod === undefined || typeof pod.metadata?.uid !== 'string') return { inputs, kind: 'wait', why: 'no-pod' };
  const podUid = pod.metadata.uid;
  if (recordedStatus(pod).wrapped.length === 0) return { inputs, kind: 'wait', why: 'not-wrapped' };

  const request = annotations[INIT_RUNTIME_REQUEST];
  const hasRequest = typeof request === 'string' && request !== '';
  const claimed = hasRequest || sandbox.metadata?.labels?.[SANDBOX_CLAIMED] === 'true';

  const address = podAddress(sandbox, pod);
  const base = runtimeBase(annotations, address, settings);
  if (base.kind === 'wait') return { inputs, kind: 'wait', why: 'no-address' };
  if (base.kind === 'refused') return { inputs, kind: 'refused', podUid, event: base.event, reason: base.reason };

  // An unclaimed pod is only ever cleared, with the token its last claim was delivered with (kept in memory).
  if (!claimed)
    return {
      inputs,
      kind: 'unclaimed',
      podUid,
      endpoint: { url: base.url, tlsAgent: base.tlsAgent, accessToken: undefined },
    };
  const token = accessToken(annotations, hasRequest ? request : undefined);
  if (token !== undefined && !/^[\x21-\x7e]+$/.test(token)) {
    const reason = `the access token (${RUNTIME_ACCESS_TOKEN}, ${LEGACY_ACCESS_TOKEN} or accessToken) is not printable ASCII`;
    return refused(inputs, podUid, 'EnvRequestRefused', reason);
  }
  const endpoint: RuntimeEndpoint = { url: base.url, tlsAgent: base.tlsAgent, accessToken: token };

  if (hasRequest && request.length > MAX_REQUEST_CHARS)
    return refused(
      inputs,
      podUid,
      'EnvRequestRefused',
      `${INIT_RUNTIME_REQUEST} is longer than ${MAX_REQUEST_CHARS} characters`,
    );
  let pairs: [string, string][];
  let content: string;
  try {
    pairs = hasRequest ? parseEnvJson(request, `annotation ${INIT_RUNTIME_REQUEST}`) : [];
    content = renderEnvFile(pairs);
  } catch (error) {
    // EnvFileError messages name fields and types, never values.
    if (error instanceof EnvFileError) return refused(inputs, podUid, 'EnvRequestRefused', error.message);
    throw error;
  }
  return {
    inputs,
    kind: 'deliver',
    target: {
      podUid,
      endpoint,
      content,
      marker: markerOf(content),
      variableCount: pairs.length,
      empty: !hasRequest,
      claimedAtMs: claimTime(annotations[CLAIM_TIMESTAMP]),
    },
  };
}

/** .env_ready's content: the digest of env.sh, so it tells which content was made ready without holding it. */
export function markerOf(content: string): string {
  return `sha256:${createHash('sha256').update(content).digest('hex')}\n`;
}

/** The IP of this very pod, or undefined while it has none that is provably its own. */
export function podAddress(sandbox: DeliverySandbox, pod: DeliveryPod): string | undefined {
  const own = ownIp(pod);
  if (typeof own === 'string' && isIP(own) !== 0) return own;
  const info = sandbox.status?.podInfo;
  if (info?.podUID !== pod.metadata?.uid || typeof info?.podIP !== 'string') return undefined;
  return isIP(info.podIP) !== 0 ? info.podIP : undefined;
}

/** The inputs of a decision: every annotation, label and field it reads, and the TLS bundle's version. */
function inputsOf(sandbox: DeliverySandbox, pod: DeliveryPod | undefined, settings: ClaimSettings): string {
  const annotations = sandbox.metadata?.annotations ?? {};
  const read = [
    INIT_RUNTIME_REQUEST,
    RUNTIME_URL,
    LEGACY_ENVD_URL,
    RUNTIME_ACCESS_TOKEN,
    LEGACY_ACCESS_TOKEN,
    RUNTIME_TLS_PORT,
    CLAIM_TIMESTAMP,
  ].map((name) => annotations[name] ?? null);
  const info = sandbox.status?.podInfo;
  const tls = settings.tls.kind === 'ok' ? settings.tls.version : settings.tls.kind;
  return createHash('sha256')
    .update(
      JSON.stringify([
        ...read,
        sandbox.metadata?.labels?.[SANDBOX_CLAIMED] ?? null,
        info?.podIP ?? null,
        info?.podUID ?? null,
        pod?.metadata?.uid ?? null,
        pod === undefined ? null : (ownIp(pod) ?? null),
        pod === undefined ? null : recordedStatus(pod).wrapped,
        tls,
        settings.trustRuntimeUrl,
        settings.runtimePort,
      ]),
    )
    .digest('hex');
}

/** Long enough for any real reason; a hostile variable name of 200 KiB must not fill a log line or an Event. */
const MAX_REASON_CHARS = 300;

function refused(inputs: string, podUid: string, event: RefusalReason, reason: string): ClaimDecision {
  const text = reason.length > MAX_REASON_CHARS ? `${reason.slice(0, MAX_REASON_CHARS)}...` : reason;
  return { inputs, kind: 'refused', podUid, event, reason: text };
}

type BaseResult =
  | { kind: 'ok'; url: string; tlsAgent: HttpsAgent | undefined }
  | { kind: 'wait' }
  | { kind: 'refused'; event: RefusalReason; reason: string };

/**
 * Where envd is. A TLS runtime is reached as upstream reaches it: HTTPS to the pod IP at the advertised port,
 * the certificate checked against RUNTIME_TLS_SERVER_NAME; never in clear, and never without a bundle. Else the
 * runtime URL annotation (or the legacy envd one) when it names this pod; else the pod IP on envd's port.
 */
function runtimeBase(
  annotations: Record<string, string>,
  address: string | undefined,
  settings: ClaimSettings,
): BaseResult {
  const tlsPort = annotations[RUNTIME_TLS_PORT];
  if (typeof tlsPort === 'string' && tlsPort !== '') {
    const port = /^[0-9]{1,5}$/.test(tlsPort) ? Number(tlsPort) : 0;
    if (port < 1 || port > 65535)
      return { kind: 'refused', event: 'EnvRequestRefused', reason: `${RUNTIME_TLS_PORT} is not a port number` };
    if (settings.tls.kind !== 'ok') {
      const why =
        settings.tls.kind === 'broken'
          ? `the bundle is unusable: ${settings.tls.reason}`
          : 'no bundle is configured (--runtime-tls-secret)';
      return {
        kind: 'refused',
        event: 'RuntimeTlsUnconfigured',
        reason: `the runtime serves TLS (${RUNTIME_TLS_PORT}) but ${why}; nothing is sent in clear`,
      };
    }
    if (address === undefined) return { kind: 'wait' };
    return { kind: 'ok', url: `https://${hostOf(address)}:${port}`, tlsAgent: settings.tls.agent };
  }
  for (const key of [RUNTIME_URL, LEGACY_ENVD_URL]) {
    const value = annotations[key];
    if (typeof value !== 'string' || value === '') continue;
    const url = checkedUrl(value, `annotation ${key}`);
    if (url.kind === 'refused') return { kind: 'refused', event: 'EnvRequestRefused', reason: url.reason };
    if (settings.trustRuntimeUrl) return { kind: 'ok', url: url.value, tlsAgent: undefined };
    if (address === undefined) return { kind: 'wait' };
    if (!sameHost(url.host, address)) {
      return {
        kind: 'refused',
        event: 'RuntimeUrlRefused',
        reason: `annotation ${key} names a host that is not the pod's IP (${address}); not followed without --trust-runtime-url`,
      };
    }
    return { kind: 'ok', url: url.value, tlsAgent: undefined };
  }
  if (address === undefined) return { kind: 'wait' };
  return { kind: 'ok', url: `http://${hostOf(address)}:${settings.runtimePort}`, tlsAgent: undefined };
}

function hostOf(ip: string): string {
  return ip.includes(':') ? `[${ip}]` : ip;
}

/** URL hosts keep IPv6 in brackets and in the WHATWG normal form; compare both sides in that form. */
function sameHost(urlHost: string, ip: string): boolean {
  const bare = urlHost.startsWith('[') && urlHost.endsWith(']') ? urlHost.slice(1, -1) : urlHost;
  if (isIP(bare) === 0) return false;
  return new URL(`http://${hostOf(bare)}/`).hostname === new URL(`http://${hostOf(ip)}/`).hostname;
}

type UrlResult = { kind: 'ok'; value: string; host: string } | { kind: 'refused'; reason: string };

function checkedUrl(raw: string, source: string): UrlResult {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { kind: 'refused', reason: `${source} is not a URL` };
  }
  if (url.protocol !== 'http:')
    return {
      kind: 'refused',
      reason: `${source}: only http runtime URLs are supported (TLS runtimes advertise ${RUNTIME_TLS_PORT}), got ${url.protocol}`,
    };
  if (url.username !== '' || url.password !== '')
    return { kind: 'refused', reason: `${source} must not carry credentials` };
  if (url.search !== '' || url.hash !== '')
    return { kind: 'refused', reason: `${source} must not carry a query or fragment` };
  return { kind: 'ok', value: `${url.origin}${url.pathname.replace(/\/+$/, '')}`, host: url.hostname };
}

/** As upstream's GetAccessToken: the runtime token annotation, then the legacy envd one; else the request's. */
function accessToken(annotations: Record<string, string>, request: string | undefined): string | undefined {
  for (const key of [RUNTIME_ACCESS_TOKEN, LEGACY_ACCESS_TOKEN]) {
    const value = annotations[key];
    if (typeof value === 'string' && value !== '') return value;
  }
  if (request === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(request);
  } catch {
    return undefined;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return undefined;
  const token = (parsed as Record<string, unknown>).accessToken;
  return typeof token === 'string' && token !== '' ? token : undefined;
}

function claimTime(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const ms = Date.parse(raw);
  return Number.isFinite(ms) ? ms : undefined;
}
