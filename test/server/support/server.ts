/**
 * An in-process webhook on a real TLS socket (127.0.0.1, a free port), wired as `serve` wires it but with
 * the config store and logger in the test's hands.
 */
import { EventEmitter } from 'node:events';
import { readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { Server } from 'node:https';
import { injectionSettings, parseServeOptions, tlsPolicyOf, transportLimits } from '../../../src/cli/serve/options.js';
import { buildApp } from '../../../src/server/app.js';
import type { Logger } from '../../../src/logging/logger.js';
import { createMetrics, type ServerMetrics } from '../../../src/server/metrics.js';
import { httpsServerOptions, loadTlsMaterial, type TlsFiles } from '../../../src/server/tls/material.js';
import type { TransportLimits } from '../../../src/server/transport.js';
import { InjectionConfigStore } from '../../../src/config/injection-config.js';
import { runtimesFromAnnotations } from '../../../src/sandbox/runtime-selection.js';

export interface LogLine {
  level: 'info' | 'warn' | 'error';
  fields: Record<string, unknown>;
  message: string;
}

export function recordingLogger(): Logger & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  const at =
    (level: LogLine['level']) =>
    (fields: object, message: string): void => {
      lines.push({ level, fields: { ...fields }, message });
    };
  return { lines, info: at('info'), warn: at('warn'), error: at('error') };
}

export interface TestServer {
  url: string;
  port: number;
  app: FastifyInstance<Server>;
  /** The store in use; `setConfig` replaces it, so no key's last valid version leaks between cases. */
  readonly store: InjectionConfigStore;
  setConfig(data: Record<string, string> | undefined): void;
  metrics: ServerMetrics;
  logs: LogLine[];
  /** The CA that signed the serving certificate, for clients to trust. */
  caPem: Buffer;
  /**
   * What the transport reports through its metrics, as events a test can wait for: `inflight` (bytes held),
   * `refused` (reason), `connections` (open count).
   */
  transport: EventEmitter;
  /** From now on every answer says `Connection: close`, as after SIGTERM. */
  startDraining(): void;
  close(): Promise<void>;
}

/**
 * `flags` are serve's own: parsed by its parser, they shape reviews, limits and TLS as they do in `serve`.
 * `limits` overrides the flags' limits in milliseconds, so a test can make a timeout small.
 */
export async function startTestServer(options: {
  tls: TlsFiles;
  caFile: string;
  flags?: string[];
  limits?: Partial<TransportLimits>;
}): Promise<TestServer> {
  const parsed = parseServeOptions(options.flags ?? [], {});
  if (parsed.kind !== 'options') throw new Error(`flags not taken: ${JSON.stringify(parsed)}`);
  let store = new InjectionConfigStore();
  const logger = recordingLogger();
  const transport = new EventEmitter();
  const metrics = reporting(
    createMetrics({ defaultMetrics: false, configLoadedAt: () => store.loadedAt, now: Date.now }),
    transport,
  );
  const material = await loadTlsMaterial(options.tls);
  let draining = false;
  const app = buildApp({
    https: httpsServerOptions(material, tlsPolicyOf(parsed.options)),
    draining: () => draining,
    limits: { ...transportLimits(parsed.options), ...options.limits },
    review: {
      config: () => store.snapshot(),
      selectRuntimes: (pod) => runtimesFromAnnotations(pod),
      ...injectionSettings(parsed.options),
    },
    ready: () => store.loadedAt !== undefined,
    logger,
    metrics,
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  return {
    url: `https://127.0.0.1:${port}`,
    port,
    app,
    get store() {
      return store;
    },
    setConfig(data) {
      store = new InjectionConfigStore();
      store.update(data);
    },
    metrics,
    logs: logger.lines,
    caPem: await readFile(options.caFile),
    transport,
    startDraining: () => (draining = true),
    close: () => app.close(),
  };
}

/** The same metrics, each transport fact also emitted on `events`. */
function reporting(metrics: ServerMetrics, events: EventEmitter): ServerMetrics {
  return {
    ...metrics,
    refused(reason) {
      metrics.refused(reason);
      events.emit('refused', reason);
    },
    inflightBytes(bytes) {
      metrics.inflightBytes(bytes);
      events.emit('inflight', bytes);
    },
    openConnections(count) {
      metrics.openConnections(count);
      events.emit('connections', count);
    },
  };
}

/** Resolves with the first value `event` carries that satisfies `test`. */
export function nextEvent<T>(
  events: EventEmitter,
  event: string,
  test: (value: T) => boolean = () => true,
): Promise<T> {
  return new Promise((resolve) => {
    const listener = (value: T): void => {
      if (!test(value)) return;
      events.off(event, listener);
      resolve(value);
    };
    events.on(event, listener);
  });
}
