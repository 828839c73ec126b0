/**
 * Certificate rotation without a restart and without a failed request. On a change in the certificate
 * directories the pair is re-read and checked; only a matching pair replaces the server's secure context,
 * which affects new handshakes while open connections keep the context they were made with. A pair caught
 * half-written (cert renewed, key not yet) fails the check and is read again a few times before giving up;
 * the server keeps serving the previous pair meanwhile.
 */
import type { SecureContextOptions } from 'node:tls';
import { dirname } from 'node:path';
import { sleepOn, type Clock } from '../../time/clock.js';
import type { WatchDirectories } from '../../file-watch/directory-watch.js';
import { reloadOnChange } from '../../file-watch/reload-on-change.js';
import {
  loadTlsMaterial,
  sameMaterial,
  secureContextOptions,
  type ReadFile,
  type TlsFiles,
  type TlsMaterial,
} from './material.js';
import type { TlsPolicy } from './policy.js';
import { errorMessage } from '../../errors/error-message.js';

/** `https.Server` satisfies this; tests pass a recorder. */
export interface SecureContextTarget {
  setSecureContext(options: SecureContextOptions): void;
}

export type TlsReloadResult =
  | { kind: 'reloaded'; material: TlsMaterial; attempts: number }
  | { kind: 'unchanged' }
  | { kind: 'failed'; message: string; attempts: number };

export interface TlsReloaderDeps {
  files: TlsFiles;
  /** The pair the server was started with. */
  initial: TlsMaterial;
  target: SecureContextTarget;
  watch: WatchDirectories;
  /** What the retries of a half-written pair wait on. */
  clock: Clock;
  readFile?: ReadFile;
  /** Reads per change before the change is given up on (the next change or resync tries again). */
  attempts: number;
  retryDelayMs: number;
  onResult(result: TlsReloadResult): void;
  /** The versions and ciphers the server started with; every new context keeps them. */
  policy?: TlsPolicy;
}

export interface TlsReloader {
  /** The pair new connections are served with. */
  readonly current: TlsMaterial;
  /** Re-read now (coalesced with a reload already waiting). Never rejects. */
  reload(): Promise<TlsReloadResult>;
  /** Stops watching and waits for a reload in progress. */
  close(): Promise<void>;
}

export function startTlsReloader(deps: TlsReloaderDeps): TlsReloader {
  let current = deps.initial;

  const attemptOnce = async (): Promise<TlsReloadResult> => {
    const next = await loadTlsMaterial(deps.files, deps.readFile);
    if (sameMaterial(next, current)) return { kind: 'unchanged' };
    deps.target.setSecureContext(secureContextOptions(next, deps.policy));
    current = next;
    return { kind: 'reloaded', material: next, attempts: 0 };
  };

  const reloadWithRetries = async (closed: () => boolean): Promise<TlsReloadResult> => {
    let lastMessage = '';
    for (let attempt = 1; attempt <= deps.attempts && !closed(); attempt += 1) {
      try {
        const result = await attemptOnce();
        return result.kind === 'reloaded' ? { ...result, attempts: attempt } : result;
      } catch (error) {
        lastMessage = errorMessage(error);
        if (attempt < deps.attempts) await sleepOn(deps.clock, deps.retryDelayMs);
      }
    }
    return { kind: 'failed', message: lastMessage, attempts: deps.attempts };
  };

  const reloads = reloadOnChange({
    watch: deps.watch,
    dirs: [deps.files.certFile, deps.files.keyFile, deps.files.clientCaFile]
      .filter((file): file is string => file !== undefined)
      .map((file) => dirname(file)),
    load: reloadWithRetries,
    whenClosed: { kind: 'unchanged' },
    onResult: (result) => deps.onResult(result),
  });

  return {
    get current() {
      return current;
    },
    reload: reloads.reload,
    close: reloads.close,
  };
}
