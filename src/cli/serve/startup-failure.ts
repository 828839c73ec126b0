/**
 * The plain line `serve` writes on stderr when it cannot start, beside the fatal JSON log line: what failed and
 * what to do about it, in the words of the flags a person can change.
 */
import type { ServeOptions } from './options.js';
import { CatalogueError, STARTUP_ERRORS, type Failure } from '../../errors/index.js';
import { errorCode, errorMessage } from '../../errors/error-message.js';

type Options = Pick<Readonly<ServeOptions>, 'host' | 'port' | 'metricsPort'>;

const TLS_CODES: ReadonlySet<string> = new Set(
  [
    STARTUP_ERRORS.tlsUnreadable,
    STARTUP_ERRORS.tlsCertificateInvalid,
    STARTUP_ERRORS.tlsKeyInvalid,
    STARTUP_ERRORS.tlsKeyMismatch,
    STARTUP_ERRORS.tlsClientCaInvalid,
  ].map((failure) => failure.code),
);

/** A start-up failure that knows what to advise (the rest are advised from their error code). */
export class StartupError extends CatalogueError {
  constructor(
    failure: Failure,
    readonly advice: string,
  ) {
    super(failure);
  }
}

export function startupFailureLine(error: unknown, options: Options): string {
  const advice = adviceFor(error, options);
  return `sandbox-injector serve: cannot start: ${errorMessage(error)}; ${advice}`;
}

function adviceFor(error: unknown, options: Options): string {
  if (error instanceof StartupError) return error.advice;
  const code = errorCode(error);
  const port = (error as { port?: unknown }).port;
  // The listener that failed is the one on the port named; both bind --host.
  const flag = port === options.metricsPort && port !== options.port ? '--metrics-port' : '--port';
  switch (code) {
    case 'EADDRINUSE':
      return `another process listens on that port: stop it, or choose another ${flag} (${flag === '--port' ? '0 picks a free one' : '0 turns metrics off'})`;
    case 'EACCES':
    case 'EPERM':
      if ((error as { syscall?: unknown }).syscall === 'listen') {
        return `this user may not bind that port: choose a ${flag} above 1023`;
      }
      return 'this user may not use that path: fix its permissions, or point the flag that names it elsewhere';
    case 'EADDRNOTAVAIL':
      return `--host ${options.host} is not an address of this machine: give one of its addresses, or 0.0.0.0`;
    case undefined:
      break;
    default:
      if (TLS_CODES.has(code)) {
        return 'fix that file, or point --tls-cert-file and --tls-key-file (and --tls-client-ca-file) at a good pair';
      }
  }
  return 'the "cannot serve" log line on stdout has the details';
}
