/**
 * An in-process webhook on a real TLS socket (127.0.0.1, a free port), wired as `serve` wires it but with
 * the config store and logger in the test's hands.
 */
import { readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { Server } from 'node:https';
import { injectionSettings, parseServeOptions } from '../../../src/config.js';
import { buildApp, type AppLogger } from '../../../src/server/app.js';
import { createMetrics, type ServerMetrics } from '../../../src/server/metrics.js';
import { httpsServerOptions, loadTlsMaterial, type TlsFiles } from '../../../src/server/tls/material.js';
import { InjectionConfigStore } from '../../../src/sources/injection-config.js';
import { runtimesFromAnnotations } from '../../../src/sources/pod-annotations.js';

export interface LogLine {
  level: 'info' | 'warn' | 'error';
  fields: Record<string, unknown>;
  message: string;
}

export function recordingLogger(): AppLogger & { lines: LogLine[] } {
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
  close(): Promise<void>;
}

/** `flags` are serve's own: parsed by its parser, they shape reviews as they do in `serve`. */
export async function startTestServer(options: { tls: TlsFiles; caFile: string; flags?: string[] }): Promise<TestServer> {
  const parsed = parseServeOptions(options.flags ?? [], {});
  if (parsed.kind !== 'options') throw new Error('flags asked for --help');
  let store = new InjectionConfigStore();
  const logger = recordingLogger();
  const metrics = createMetrics({ defaultMetrics: false, configLoadedAt: () => store.loadedAt, now: Date.now });
  const material = await loadTlsMaterial(options.tls);
  const app = buildApp({
    https: httpsServerOptions(material),
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
    close: () => app.close(),
  };
}
