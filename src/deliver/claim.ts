/**
 * What a claim asks to be delivered, read from a Sandbox and its pod: pure, no I/O. The decision names why
 * nothing is to be written (an unclaimed Sandbox, a pod without wrapped containers), why a request is refused
 * (a bad variable name, an unusable runtime URL), or the exact bytes to write and where. No value of a
 * variable, and no token, ever appears in a reason.
 */
import { createHash } from 'node:crypto';
import { EnvFileError } from '../envfile/errors.js';
import { parseEnvJson } from '../envfile/parse-env-json.js';
import { renderEnvFile } from '../envfile/render-env-file.js';
import { recordedStatus } from '../injection/status.js';
import type { Pod } from '../injection/index.js';

export const INIT_RUNTIME_REQUEST = 'agents.kruise.io/init-runtime-request';
export const RUNTIME_URL = 'agents.kruise.io/runtime-url';
export const LEGACY_ENVD_URL = 'e2b.agents.kruise.io/envd-url';
export const RUNTIME_ACCESS_TOKEN = 'agents.kruise.io/runtime-access-token';
export const CLAIM_TIMESTAMP = 'agents.kruise.io/claim-timestamp';

/** The Sandbox fields delivery reads; everything else of the object is ignored. */
export interface DeliverySandbox {
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    annotations?: Record<string, string>;
  };
  status?: { podInfo?: { podIP?: unknown } };
}

export interface DeliveryTarget {
  podUid: string;
  /** Base URL of the pod's envd, without a trailing slash. */
  runtimeUrl: string;
  /** Sent as X-Access-Token; undefined sends none. */
  accessToken: string | undefined;
  /** The whole of env.sh, as `env-file` renders it. */
  content: string;
  /** What .env_ready holds: names this content, so a later look tells whether it was delivered. */
  marker: string;
  variableCount: number;
  /** The claim's time, in ms since the epoch, when the Sandbox says it. */
  claimedAtMs: number | undefined;
}

export type ClaimDecision =
  | { kind: 'skip'; reason: 'unclaimed' | 'no-pod' | 'not-wrapped' }
  | { kind: 'refused'; reason: string }
  | { kind: 'deliver'; target: DeliveryTarget };

export interface ClaimSettings {
  /** The port of envd when only the pod IP is known. */
  runtimePort: number;
}

/** The largest request annotation read; kube-apiserver caps all annotations at 256 KiB together. */
const MAX_REQUEST_CHARS = 256 * 1024;

export function claimDecision(sandbox: DeliverySandbox, pod: Pod | undefined, settings: ClaimSettings): ClaimDecision {
  const annotations = sandbox.metadata?.annotations ?? {};
  const request = annotations[INIT_RUNTIME_REQUEST];
  if (typeof request !== 'string' || request === '') return { kind: 'skip', reason: 'unclaimed' };
  if (pod === undefined || typeof pod.metadata?.uid !== 'string') return { kind: 'skip', reason: 'no-pod' };
  if (recordedStatus(pod).wrapped.length === 0) return { kind: 'skip', reason: 'not-wrapped' };

  if (request.length > MAX_REQUEST_CHARS)
    return refused(`${INIT_RUNTIME_REQUEST} is longer than ${MAX_REQUEST_CHARS} characters`);
  let content: string;
  let variableCount: number;
  try {
    const pairs = parseEnvJson(request, `annotation ${INIT_RUNTIME_REQUEST}`);
    content = renderEnvFile(pairs);
    variableCount = pairs.length;
  } catch (error) {
    // EnvFileError messages name fields and types, never values.
    if (error instanceof EnvFileError) return refused(error.message);
    throw error;
  }
  const url = runtimeUrl(annotations, sandbox, settings);
  if (url.kind === 'refused') return url;
  const token = accessToken(annotations, request);
  if (token !== undefined && !/^[\x21-\x7e]+$/.test(token)) {
    return refused(`the access token (${RUNTIME_ACCESS_TOKEN} or accessToken) is not printable ASCII`);
  }
  return {
    kind: 'deliver',
    target: {
      podUid: pod.metadata.uid,
      runtimeUrl: url.value,
      accessToken: token,
      content,
      marker: markerOf(content),
      variableCount,
      claimedAtMs: claimTime(annotations[CLAIM_TIMESTAMP]),
    },
  };
}

/** .env_ready's content: the digest of env.sh, so it tells which content was made ready without holding it. */
export function markerOf(content: string): string {
  return `sha256:${createHash('sha256').update(content).digest('hex')}\n`;
}

/** Long enough for any real reason; a hostile variable name of 200 KiB must not fill a log line or an Event. */
const MAX_REASON_CHARS = 300;

function refused(reason: string): ClaimDecision {
  return {
    kind: 'refused',
    reason: reason.length > MAX_REASON_CHARS ? `${reason.slice(0, MAX_REASON_CHARS)}...` : reason,
  };
}

type UrlResult = { kind: 'ok'; value: string } | { kind: 'refused'; reason: string };

/** Found as upstream finds it: the runtime URL annotation, the legacy envd one, else the pod IP on envd's port. */
function runtimeUrl(annotations: Record<string, string>, sandbox: DeliverySandbox, settings: ClaimSettings): UrlResult {
  for (const key of [RUNTIME_URL, LEGACY_ENVD_URL]) {
    const value = annotations[key];
    if (typeof value === 'string' && value !== '') return checkedUrl(value, `annotation ${key}`);
  }
  const ip = sandbox.status?.podInfo?.podIP;
  if (typeof ip !== 'string' || ip === '')
    return { kind: 'refused', reason: 'no runtime URL: no annotation and no status.podInfo.podIP' };
  const host = ip.includes(':') ? `[${ip}]` : ip;
  return checkedUrl(`http://${host}:${settings.runtimePort}`, 'status.podInfo.podIP');
}

function checkedUrl(raw: string, source: string): UrlResult {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { kind: 'refused', reason: `${source} is not a URL` };
  }
  if (url.protocol !== 'http:')
    return { kind: 'refused', reason: `${source}: only http runtime URLs are supported, got ${url.protocol}` };
  if (url.username !== '' || url.password !== '')
    return { kind: 'refused', reason: `${source} must not carry credentials` };
  if (url.search !== '' || url.hash !== '')
    return { kind: 'refused', reason: `${source} must not carry a query or fragment` };
  return { kind: 'ok', value: `${url.origin}${url.pathname.replace(/\/+$/, '')}` };
}

function accessToken(annotations: Record<string, string>, request: string): string | undefined {
  const fromAnnotation = annotations[RUNTIME_ACCESS_TOKEN];
  if (typeof fromAnnotation === 'string' && fromAnnotation !== '') return fromAnnotation;
  // parseEnvJson has already accepted the request as JSON.
  const parsed = JSON.parse(request) as unknown;
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return undefined;
  const token = (parsed as Record<string, unknown>).accessToken;
  return typeof token === 'string' && token !== '' ? token : undefined;
}

function claimTime(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const ms = Date.parse(raw);
  return Number.isFinite(ms) ? ms : undefined;
}
