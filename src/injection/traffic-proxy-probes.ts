/**
 * The traffic-proxy runtime's health-probe rewrite, as OpenKruise Agents' controller makes it once the runtimes
 * are in the pod (upstream's ApplyHealthProbeRewrite). A proxy that intercepts the pod's inbound traffic also
 * catches the kubelet's network probes, which then fail; so the kubelet is sent to the proxy's status port
 * instead, and the proxy probes the app as the pod said to, from a list it reads from its environment.
 *
 * It runs when traffic-proxy is in the pod (injected now or before, or found present) and the pod's annotation
 * HEALTH_PROBE_REWRITE_ANNOTATION is exactly "true", the runtime's own annotations included:
 * 1. The proxy is the container SIDECAR_PROXY_ANNOTATION names (istio-proxy when it is absent or empty), looked
 *    for in containers, then init containers. Without one nothing changes, and a warning says so.
 * 2. Its probers: every other container's (init containers first) httpGet, tcpSocket and grpc probes, and httpGet
 *    and tcpSocket preStop and postStart handlers, each keyed by the path the proxy serves for it
 *    (/app-health/C/readyz|livez|startupz, /app-lifecycle/C/prestopz|poststartz). A named port is resolved from
 *    the container's ports, and the prober is left out when no port has that name; a numbered port that is
 *    already the status port is left out too (that probe was rewritten before). Written as Go's json.Marshal
 *    writes upstream's map of Prober structs, byte for byte: the controller writes it so, and the proxy parses it.
 * 3. The probes and handlers themselves become HTTP GETs of the status port at those paths; HTTPS becomes HTTP,
 *    host and headers stay, as upstream keeps them. A prober left out in 2 is rewritten all the same, as upstream
 *    does. Exec probes and exec and sleep handlers are left as they are (Auto wraps exec probes afterwards).
 * 4. The probers go into the proxy's env as PROBERS_ENV, appended. Where the proxy already has that variable
 *    (written by an earlier admission or by the controller, and something added probes since), the new probers
 *    are merged into it, so the variable is never there twice.
 *
 * Idempotent: a rewritten probe already asks the status port at its path, so rewriting it again changes nothing,
 * and it is left out of the probers, so a second pass has no prober to add.
 */
import { marshalLikeGo } from '../kube-shapes/go-json.js';
import { HEALTH_PROBE_REWRITE_ANNOTATION, SIDECAR_PROXY_ANNOTATION, TRAFFIC_PROXY } from '../sandbox/api.js';
import type { PodEditor, Segment } from './editor.js';
import { containerPath } from './merge.js';
import type { InjectionReport, ProbeRewrite, ProxiedProbe } from './report.js';
import type { Container, ContainerList, JsonObject, Pod } from './types.js';

/** Upstream's defaults, fixed in its code: the proxy's name, the variable it reads, and its status port. */
const DEFAULT_PROXY = 'istio-proxy';
const PROBERS_ENV = 'ISTIO_KUBE_APP_PROBERS';
const STATUS_PORT = 15020;

/** In the order upstream visits them within a container, with the path the proxy serves for each. */
const PROBES = [
  { name: 'readinessProbe', url: (c: string) => `/app-health/${c}/readyz` },
  { name: 'livenessProbe', url: (c: string) => `/app-health/${c}/livez` },
  { name: 'startupProbe', url: (c: string) => `/app-health/${c}/startupz` },
] as const;
const HANDLERS = [
  { name: 'preStop', url: (c: string) => `/app-lifecycle/${c}/prestopz` },
  { name: 'postStart', url: (c: string) => `/app-lifecycle/${c}/poststartz` },
] as const;

/** The handlers the proxy takes over, in upstream's order of precedence when a probe (wrongly) has several. */
const PROBE_KINDS = ['httpGet', 'tcpSocket', 'grpc'] as const;
const HANDLER_KINDS = ['httpGet', 'tcpSocket'] as const;
type Kind = (typeof PROBE_KINDS)[number];

/** Where the proxy container is. */
interface ProxyPlace {
  list: ContainerList;
  index: number;
  container: Container;
}

/** The edits of one pass, gathered from the pod as it stood before the first of them. */
interface TakeOver {
  probers: Map<string, JsonObject>;
  edits: { path: Segment[]; value: JsonObject }[];
  probes: ProxiedProbe[];
}

/**
 * Applies the rewrite when the pod asks for it; the caller has checked that traffic-proxy is in the pod. Returns
 * what goes through the proxy, or undefined when the rewrite does not apply.
 */
export function rewriteProbesThroughProxy(editor: PodEditor, report: InjectionReport): ProbeRewrite | undefined {
  if (editor.entry('annotations', HEALTH_PROBE_REWRITE_ANNOTATION) !== 'true') return undefined;
  const named = editor.entry('annotations', SIDECAR_PROXY_ANNOTATION);
  // Upstream reads an empty name as none.
  const proxy = named === undefined || named === '' ? DEFAULT_PROXY : named;
  const pod = editor.pod;
  const place = findProxy(pod, proxy);
  if (place === undefined) {
    report.warnings.push(noProxyWarning(proxy));
    return undefined;
  }
  const pass: TakeOver = { probers: new Map(), edits: [], probes: [] };
  for (const list of ['initContainers', 'containers'] as const) {
    (pod.spec[list] ?? []).forEach((container, index) => {
      if (container.name !== proxy) takeOver(container, containerPath(list, index), pass);
    });
  }
  for (const { path, value } of pass.edits) editor.set(path, value);
  if (pass.probers.size > 0) setProbers(editor, place, pass.probers);
  return { proxy, probes: pass.probes };
}

/** The admission's warning when the pod asks for the rewrite but has no proxy to take the probes. */
export function noProxyWarning(proxy: string): string {
  return `${TRAFFIC_PROXY}: health probes not rewritten, the pod has no proxy container "${proxy}"`;
}

/** The first container of that name, then the first init container, as upstream looks it up. */
function findProxy(pod: Pod, name: string): ProxyPlace | undefined {
  for (const list of ['containers', 'initContainers'] as const) {
    const containers = pod.spec[list] ?? [];
    const index = containers.findIndex((c) => c.name === name);
    const container = containers[index];
    if (container !== undefined) return { list, index, container };
  }
  return undefined;
}

/** One container's probes and handlers: their probers, their rewrites and their names. */
function takeOver(container: Container, path: Segment[], pass: TakeOver): void {
  const ports = namedPorts(container.ports);
  for (const { name, url } of PROBES) {
    const probe = container[name];
    const kind = kindOf(probe, PROBE_KINDS);
    if (!isObject(probe) || kind === undefined) continue;
    const to = url(container.name);
    const prober = proberOf(probe, kind, ports, probe.timeoutSeconds);
    if (prober !== undefined) pass.probers.set(to, prober);
    const rewritten = rewrite(probe, kind, to);
    if (rewritten !== undefined) pass.edits.push({ path: [...path, name], value: rewritten });
    pass.probes.push({ container: container.name, probe: name });
  }
  const lifecycle = container.lifecycle;
  if (!isObject(lifecycle)) return;
  for (const { name, url } of HANDLERS) {
    const handler = lifecycle[name];
    const kind = kindOf(handler, HANDLER_KINDS);
    if (!isObject(handler) || kind === undefined) continue;
    const to = url(container.name);
    const prober = proberOf(handler, kind, ports, undefined);
    if (prober !== undefined) pass.probers.set(to, prober);
    const rewritten = rewrite(handler, kind, to);
    if (rewritten !== undefined) pass.edits.push({ path: [...path, 'lifecycle', name], value: rewritten });
    pass.probes.push({ container: container.name, probe: name });
  }
}

/** The handler upstream acts on: the first of `kinds` that is set (Go's nil is JSON's null or absence). */
function kindOf(probe: unknown, kinds: readonly Kind[]): Kind | undefined {
  return isObject(probe) ? kinds.find((kind) => isObject(probe[kind])) : undefined;
}

/** The container's port numbers by name; a later port of the same name wins, as in upstream's map. */
function namedPorts(ports: unknown): Map<string, number> {
  const byName = new Map<string, number>();
  if (!Array.isArray(ports)) return byName;
  for (const port of ports as unknown[]) {
    if (!isObject(port) || typeof port.name !== 'string' || port.name === '') continue;
    byName.set(port.name, int(port.containerPort));
  }
  return byName;
}

/**
 * The prober the proxy runs for a probe or handler, as a Go struct (fields in upstream's order, `omitempty` ones
 * left out when zero), or undefined when upstream leaves it out.
 */
function proberOf(
  probe: JsonObject,
  kind: Kind,
  ports: ReadonlyMap<string, number>,
  timeout: unknown,
): JsonObject | undefined {
  const action = probe[kind] as JsonObject;
  let handler: JsonObject;
  if (kind === 'grpc') {
    // gRPC ports are numbers only; upstream takes them as they are, the status port included.
    handler = { port: int(action.port), service: typeof action.service === 'string' ? action.service : null };
  } else {
    const port = proberPort(action.port, ports);
    if (port === undefined) return undefined;
    handler = kind === 'httpGet' ? httpGetAction(action, port) : { port, host: nonEmpty(action.host) };
  }
  return { [kind]: handler, timeoutSeconds: int(timeout) === 0 ? undefined : int(timeout) };
}

/** A named port resolved, or undefined: a name the container lacks, or a number that is the status port. */
function proberPort(port: unknown, ports: ReadonlyMap<string, number>): number | undefined {
  if (typeof port === 'string') return ports.get(port);
  const number = int(port);
  return number === STATUS_PORT ? undefined : number;
}

/** k8s.io/api's HTTPGetAction: path, port, host, scheme, httpHeaders (each header's name and value always). */
function httpGetAction(action: JsonObject, port: number): JsonObject {
  const headers = Array.isArray(action.httpHeaders) ? (action.httpHeaders as unknown[]) : [];
  return {
    path: nonEmpty(action.path),
    port,
    host: nonEmpty(action.host),
    scheme: nonEmpty(action.scheme),
    httpHeaders:
      headers.length === 0
        ? undefined
        : headers.map((header) => {
            const { name, value } = isObject(header) ? header : {};
            return { name: typeof name === 'string' ? name : '', value: typeof value === 'string' ? value : '' };
          }),
  };
}

/**
 * The probe or handler as an HTTP GET of the status port at `url`, or undefined when it is one already. Only
 * the handler taken over changes; the probe's other fields stay.
 */
function rewrite(probe: JsonObject, kind: Kind, url: string): JsonObject | undefined {
  if (kind === 'httpGet') {
    const action = probe.httpGet as JsonObject;
    const https = action.scheme === 'HTTPS';
    if (action.path === url && action.port === STATUS_PORT && !https) return undefined;
    const httpGet: JsonObject = { ...action, path: url, port: STATUS_PORT };
    // The kubelet asks the proxy in plain HTTP; the proxy asks the app as the probe said.
    if (https) httpGet.scheme = 'HTTP';
    return { ...probe, httpGet };
  }
  const rest: JsonObject = { ...probe };
  delete rest[kind];
  return { ...rest, httpGet: { path: url, port: STATUS_PORT } };
}

/** Appends the probers to the proxy's env, or merges them into the variable it has (its last, which wins). */
function setProbers(editor: PodEditor, proxy: ProxyPlace, probers: ReadonlyMap<string, JsonObject>): void {
  const envPath = [...containerPath(proxy.list, proxy.index), 'env'];
  const env = proxy.container.env ?? [];
  const at = env.findLastIndex((entry) => isObject(entry) && entry.name === PROBERS_ENV);
  if (at === -1) {
    editor.append(envPath, [{ name: PROBERS_ENV, value: marshalLikeGo(probers) }]);
    return;
  }
  const earlier = env[at]?.value;
  const value = marshalLikeGo(new Map<string, unknown>([...earlierProbers(earlier), ...probers]));
  if (value !== earlier) editor.set([...envPath, at], { name: PROBERS_ENV, value });
}

/** The probers a variable already holds; a value that is not a JSON object holds none. */
function earlierProbers(value: unknown): [string, unknown][] {
  if (typeof value !== 'string') return [];
  try {
    const parsed: unknown = JSON.parse(value);
    return isObject(parsed) ? Object.entries(parsed) : [];
  } catch {
    return [];
  }
}

/** An int32 field as Go decodes it: a number, or zero for what Go would not have (null, absent). */
function int(value: unknown): number {
  return typeof value === 'number' ? value : 0;
}

/** An `omitempty` string field: left out when empty or absent. */
function nonEmpty(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function isObject(value: unknown): value is JsonObject {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
