/**
 * Where a pod's envd is and how it is spoken to, from the Sandbox's annotations and the pod's own address. A
 * TLS runtime is reached as upstream reaches it (pkg/utils/runtime/transport.go): HTTPS to the pod IP at the
 * advertised port, the certificate checked against RUNTIME_TLS_SERVER_NAME; never in clear, and never without
 * a bundle. A runtime without it is refused when TLS is required (`--require-runtime-tls`). Else the runtime URL annotation (or the legacy envd one), followed only when its host is the pod's
 * IP unless the operator trusts them; else the pod IP on envd's port.
 */
import type { Agent as HttpsAgent } from 'node:https';
import { isIP } from 'node:net';
import {
  LEGACY_ACCESS_TOKEN,
  LEGACY_ENVD_URL,
  RUNTIME_ACCESS_TOKEN,
  RUNTIME_TLS_PORT,
  RUNTIME_URL,
} from '../../sandbox/api.js';
import type { RefusalReason } from './outcome.js';
import { runtimeTlsPort } from '../envd/runtime-tls.js';
import type { RuntimeTlsState } from '../envd/runtime-tls-source.js';

/** How the runtime is spoken to: plain HTTP, or HTTPS through an agent that verifies RUNTIME_TLS_SERVER_NAME. */
export type RuntimeTls = RuntimeTlsState;

export interface EndpointSettings {
  /** The port of envd when only the pod IP is known. */
  runtimePort: number;
  /** Follow runtime URL annotations whatever their host (an operator's choice, off by default). */
  trustRuntimeUrl: boolean;
  /** Refuse a runtime that serves plain HTTP: a claim's token and variables never cross the network in clear. */
  requireTls: boolean;
  tls: RuntimeTls;
}

export type BaseResult =
  | { kind: 'ok'; url: string; tlsAgent: HttpsAgent | undefined }
  | { kind: 'refused'; event: RefusalReason; reason: string };

/** The base URL of envd (without its token), for the pod whose own IP is `address`. */
export function runtimeBase(
  annotations: Record<string, string>,
  address: string,
  settings: EndpointSettings,
): BaseResult {
  const tlsPort = runtimeTlsPort(annotations);
  if (tlsPort.kind === 'invalid') return { kind: 'refused', event: 'EnvRequestRefused', reason: tlsPort.reason };
  if (tlsPort.kind === 'port') {
    const port = tlsPort.port;
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
    return { kind: 'ok', url: `https://${hostOf(address)}:${port}`, tlsAgent: settings.tls.agent };
  }
  if (settings.requireTls)
    return {
      kind: 'refused',
      event: 'RuntimeTlsRequired',
      reason: `the runtime serves plain HTTP (no ${RUNTIME_TLS_PORT}) and --require-runtime-tls is on; nothing is sent in clear`,
    };
  for (const key of [RUNTIME_URL, LEGACY_ENVD_URL]) {
    const value = annotations[key];
    if (typeof value !== 'string' || value === '') continue;
    const url = checkedUrl(value, `annotation ${key}`);
    if (url.kind === 'refused') return { kind: 'refused', event: 'EnvRequestRefused', reason: url.reason };
    if (settings.trustRuntimeUrl) return { kind: 'ok', url: url.value, tlsAgent: undefined };
    if (!sameHost(url.host, address)) {
      return {
        kind: 'refused',
        event: 'RuntimeUrlRefused',
        reason: `annotation ${key} names a host that is not the pod's IP (${address}); not followed without --trust-runtime-url`,
      };
    }
    return { kind: 'ok', url: url.value, tlsAgent: undefined };
  }
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
export function accessToken(annotations: Record<string, string>, request: string | undefined): string | undefined {
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
