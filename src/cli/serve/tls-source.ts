/**
 * The serving certificate: where its files come from, and the server following them as they change.
 * Given files are served as they are; otherwise cluster mode keeps a pair in a Secret (self-managed) and
 * local mode makes a self-signed pair for localhost. Whichever it is, the files' directories are watched
 * and new handshakes get the new pair.
 */
import type { Logger } from 'pino';
import type { ServeOptions } from './options.js';
import type { ServerMetrics } from '../../server/metrics.js';
import type { TlsFiles, TlsMaterial } from '../../server/tls/material.js';
import type { TlsPolicy } from '../../server/tls/policy.js';
import { startTlsReloader, type SecureContextTarget, type TlsReloadResult } from '../../server/tls/reloader.js';
import { ensureSelfSignedCertificates } from '../../server/tls/self-signed.js';
import type { Clock } from '../../time/clock.js';
import type { WatchDirectories } from '../../file-watch/directory-watch.js';
import type { ServeTarget } from './cluster.js';
import type { Lifetime } from './lifetime.js';

/** A pair caught half-written is read again this many times, this far apart, before the change is dropped. */
const TLS_RELOAD_ATTEMPTS = 5;
const TLS_RELOAD_RETRY_MS = 400;

/** The files to serve; in self-managed mode, once the first pair from the Secret is in place. */
export async function resolveTlsFiles(
  options: Readonly<ServeOptions>,
  target: ServeTarget,
  logger: Logger,
  lifetime: Lifetime,
  clock: Clock,
): Promise<TlsFiles> {
  const clientCa = options.tlsClientCaFile === undefined ? {} : { clientCaFile: options.tlsClientCaFile };
  if (options.tlsCertFile !== undefined && options.tlsKeyFile !== undefined) {
    return { certFile: options.tlsCertFile, keyFile: options.tlsKeyFile, ...clientCa };
  }
  // In local mode the options refuse self-managed (options.ts): auto there means a self-signed pair.
  if (target.mode === 'cluster' && options.certMode !== 'files') {
    // Imported here: a local run has no use for the Kubernetes client it loads.
    const { startSelfManagedCertificates } = await import('../../certs/self-managed.js');
    const certificates = startSelfManagedCertificates({
      clients: target.kube,
      namespace: options.certNamespace,
      secretName: options.certSecretName,
      serviceName: options.serviceName,
      webhookConfigName: options.webhookConfigName,
      dir: options.certDir,
      extraSans: (options.certExtraSans ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== ''),
      pollIntervalMs: options.certPollMs,
      clock,
      logger,
    });
    lifetime.onClose(() => certificates.stop());
    await certificates.ready;
    logger.info(
      { secret: `${options.certNamespace}/${options.certSecretName}`, dir: options.certDir },
      'self-managed certificate ready',
    );
    return { certFile: certificates.files.certFile, keyFile: certificates.files.keyFile, ...clientCa };
  }
  const { files, outcome } = await ensureSelfSignedCertificates(options.selfSignedDir, new Date(clock.now()));
  logger.info(
    { caFile: files.caCertFile, certFile: files.certFile, outcome },
    'no certificate given: serving a self-signed one for localhost (clients trust the CA file)',
  );
  return { certFile: files.certFile, keyFile: files.keyFile, ...clientCa };
}

export interface TlsFollowDeps {
  files: TlsFiles;
  /** The pair the server was started with. */
  initial: TlsMaterial;
  /** The listening server. */
  target: SecureContextTarget;
  watch: WatchDirectories;
  policy: TlsPolicy;
  metrics: ServerMetrics;
  logger: Logger;
  lifetime: Lifetime;
  clock: Clock;
}

/** From now until the end of `lifetime`, a changed pair replaces the server's secure context. */
export function followTlsFiles(deps: TlsFollowDeps): void {
  const { logger, metrics } = deps;
  const reloader = startTlsReloader({
    files: deps.files,
    initial: deps.initial,
    target: deps.target,
    watch: deps.watch,
    clock: deps.clock,
    attempts: TLS_RELOAD_ATTEMPTS,
    retryDelayMs: TLS_RELOAD_RETRY_MS,
    policy: deps.policy,
    onResult: (result) => recordTlsReload(logger, metrics, result),
  });
  deps.lifetime.onClose(() => reloader.close());
}

function recordTlsReload(logger: Logger, metrics: ServerMetrics, result: TlsReloadResult): void {
  if (result.kind === 'reloaded') {
    metrics.tlsReload('success');
    metrics.tlsCertificate(result.material.notAfter);
    const { subject, notAfter } = result.material;
    logger.info(
      { subject, notAfter: notAfter.toISOString(), attempts: result.attempts },
      'serving certificate reloaded',
    );
  } else if (result.kind === 'failed') {
    metrics.tlsReload('failure');
    logger.warn(
      { error: result.message, attempts: result.attempts },
      'serving certificate not reloaded; the previous one stays in use',
    );
  }
}
