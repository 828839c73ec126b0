/**
 * The injection config from a ConfigMap manifest file, kept current while the server runs. Its directory is
 * watched rather than the file, because a ConfigMap mounted by Kubernetes changes by an atomic swap of the
 * `..data` symlink that the file itself never sees.
 *
 * A file that cannot be read or parsed changes nothing: the last valid data stays in use and the failure is
 * logged and reported. A bad key inside a good file is the store's business (it keeps that key's last valid
 * version). A missing file means the ConfigMap does not exist, as with a mount marked `optional: true`.
 */
import { readFile as fsReadFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { parseConfigMapManifest } from './configmap-manifest.js';
import type { ConfigUpdateReport } from './injection-config.js';
import type { WatchDirectories } from '../file-watch/directory-watch.js';
import { errorMessage } from '../errors/error-message.js';
import type { Logger } from '../logging/logger.js';
import { reloadOnChange } from '../file-watch/reload-on-change.js';

/** The part of InjectionConfigStore this module writes to. */
export interface ConfigSink {
  update(data: Record<string, string> | undefined): ConfigUpdateReport;
}

export type ConfigWatchLogger = Pick<Logger, 'info' | 'warn'>;

export type ConfigLoadResult =
  | ({ kind: 'loaded'; absent: boolean } & ConfigUpdateReport)
  /** Same bytes as the data in use: the store is left alone. */
  | { kind: 'unchanged' }
  | { kind: 'failed'; message: string };

export interface ConfigFileWatchDeps {
  file: string;
  store: ConfigSink;
  watch: WatchDirectories;
  logger: ConfigWatchLogger;
  readFile?: (path: string) => Promise<string>;
  /** Called after every load attempt, the first included (metrics hang here). */
  onResult?(result: ConfigLoadResult): void;
}

export interface ConfigFileWatch {
  /** How the load at start went; `failed` leaves the store without data (the server reports not ready). */
  readonly first: ConfigLoadResult;
  /** Re-read now, coalesced with a reload already waiting. Never rejects. */
  reload(): Promise<ConfigLoadResult>;
  /** Stops watching and waits for a load in progress. */
  close(): Promise<void>;
}

const ABSENT = Symbol('absent');

/** Loads the file once, then watches it. Throws only if its directory cannot be watched. */
export async function startConfigFileWatch(deps: ConfigFileWatchDeps): Promise<ConfigFileWatch> {
  const readFile = deps.readFile ?? ((path: string) => fsReadFile(path, 'utf8'));
  let applied: string | typeof ABSENT | undefined;

  const loadOnce = async (): Promise<ConfigLoadResult> => {
    let text: string | typeof ABSENT;
    try {
      text = await readFile(deps.file);
    } catch (error) {
      if (!isNotFound(error)) return { kind: 'failed', message: `cannot read ${deps.file}: ${errorMessage(error)}` };
      text = ABSENT;
    }
    if (text === applied) return { kind: 'unchanged' };
    let data: Record<string, string> | undefined;
    try {
      data = text === ABSENT ? undefined : parseConfigMapManifest(text, deps.file);
    } catch (error) {
      return { kind: 'failed', message: errorMessage(error) };
    }
    const report = deps.store.update(data);
    applied = text;
    return { kind: 'loaded', absent: data === undefined, ...report };
  };

  const report = (result: ConfigLoadResult): void => {
    logResult(deps, result);
    deps.onResult?.(result);
  };

  // The first load needs no coalescing: nothing can ask for another before this function returns.
  const first = await loadOnce();
  report(first);
  const reloads = reloadOnChange({
    watch: deps.watch,
    dirs: [dirname(deps.file)],
    load: loadOnce,
    whenClosed: { kind: 'unchanged' },
    onResult: report,
  });
  return { first, reload: reloads.reload, close: reloads.close };
}

function logResult({ file, logger }: ConfigFileWatchDeps, result: ConfigLoadResult): void {
  if (result.kind === 'failed') {
    logger.warn({ file, error: result.message }, 'injection config not reloaded; the last valid config stays in use');
    return;
  }
  if (result.kind === 'unchanged') return;
  if (result.absent) {
    logger.warn(
      { file },
      'injection config file does not exist: serving as if the ConfigMap is absent (nothing injected)',
    );
  } else {
    logger.info({ file, invalidKeys: result.invalidKeys.length }, 'injection config loaded');
  }
  logConfigProblems(logger, { file }, result);
}

/**
 * One warning per bad key, saying what happens to admissions that ask for it, and one line for every field
 * ignored in this version of the config; the file and ConfigMap sources share it.
 */
export function logConfigProblems(
  logger: ConfigWatchLogger,
  source: Record<string, string>,
  report: ConfigUpdateReport,
): void {
  for (const { key, message, fellBack } of report.invalidKeys) {
    const consequence = fellBack ? 'its last valid version stays in use' : 'runtimes asking for it are denied';
    logger.warn({ ...source, key, error: message }, `injection config key is invalid: ${consequence}`);
  }
  if (report.unknownFields.length > 0) {
    const fields = report.unknownFields.flatMap(({ key, fields }) => fields.map((field) => `${key}${field}`));
    logger.warn({ ...source, fields }, 'injection config has fields the Sandbox controller ignores too: ignored');
  }
}

function isNotFound(error: unknown): boolean {
  return error instanceof Error && 'code' in error && error.code === 'ENOENT';
}
