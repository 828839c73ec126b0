/**
 * The envd requests that bring a pod's env folder to what the claim wants: pure, the random part of the
 * temporary names passed in.
 *
 * envd runs as root and follows a symlink at the path it uploads to, and an upload truncates its target in
 * place, where a wrapped command or probe may be reading it. So nothing is ever uploaded under its final name:
 * each file goes to a temporary name of this attempt's own (two replicas, or two attempts, never share one) and
 * is moved into place, a rename that replaces whatever is there, symlink included, and that no reader sees
 * half done. env.sh first, .env_ready last: the wrapper reads env.sh only once .env_ready exists.
 *
 * - .env_ready holding this content's marker: delivered already (by this process or an earlier one);
 * - anything else: both temporary files in one upload (envd writes each part of a multipart upload to the
 *   path its file name gives), then env.sh's Move, then .env_ready's.
 *
 * After a first delivery (no .env_ready before), one byte goes to the wrappers' wake FIFO if the folder holds one.
 *
 * Clearing (the claim ended while the pod lives) goes the other way: .env_ready first, so nothing starts on
 * the way, then env.sh, then any temporary file an interrupted attempt left; last, when the pod served a claim,
 * .env_recycled, which ends that claim's commands and keeps the next claim out until their containers have
 * restarted (recycle.ts), and a wake, so that the wrappers see it at once.
 */
import { posix } from 'node:path';
import { ENV_FILE_NAME, READY_FILE_NAME, RECYCLED_FILE_NAME, WAKE_FILE_NAME } from '../../wrapper/env-dir.js';

/** A file an upload writes: its path in the pod and its content. */
export interface UploadFile {
  path: string;
  body: string;
}

export type DeliveryStep =
  /** One request, whatever the number of files; envd writes them in order. */
  | { op: 'upload'; files: readonly UploadFile[] }
  | { op: 'move'; source: string; destination: string }
  | { op: 'remove'; path: string };

/** .env_ready as a delivery found it: not listed (or gone by its GET), or its content (bounded by the client). */
export type ReadyState = { found: false } | { found: true; body: string };

export interface EnvPaths {
  dir: string;
  envFile: string;
  readyFile: string;
  wakeFile: string;
  recycledFile: string;
}

export function envPaths(envDir: string): EnvPaths {
  return {
    dir: envDir,
    envFile: posix.join(envDir, ENV_FILE_NAME),
    readyFile: posix.join(envDir, READY_FILE_NAME),
    wakeFile: posix.join(envDir, WAKE_FILE_NAME),
    recycledFile: posix.join(envDir, RECYCLED_FILE_NAME),
  };
}

/** A temporary name next to `finalPath`, unique to one attempt: `.<name>.<nonce>.tmp`. */
export function tempPath(finalPath: string, nonce: string): string {
  const name = posix.basename(finalPath).replace(/^\./, '');
  return posix.join(posix.dirname(finalPath), `.${name}.${nonce}.tmp`);
}

/** The files delivery and clearing write, each of which goes up under a temporary name first. */
const WRITTEN_NAMES = [ENV_FILE_NAME, READY_FILE_NAME, RECYCLED_FILE_NAME];
/** The nonce a temporary name may carry: what `tempPath` is given, from `randomHex`. */
const NONCE_IN_NAME = /\.([0-9a-f]{8,64})\.tmp$/;

/** The temporary files any attempt makes (tempPath's names), by name alone: what clearing removes. */
export function isTempName(name: string): boolean {
  const nonce = NONCE_IN_NAME.exec(name)?.[1];
  return nonce !== undefined && WRITTEN_NAMES.some((written) => tempPath(written, nonce) === name);
}

export function deliverySteps(
  paths: EnvPaths,
  ready: ReadyState,
  content: string,
  marker: string,
  nonce: string,
): DeliveryStep[] {
  if (ready.found && ready.body === marker) return [];
  const envTemp = tempPath(paths.envFile, nonce);
  const readyTemp = tempPath(paths.readyFile, nonce);
  return [
    {
      op: 'upload',
      files: [
        { path: envTemp, body: content },
        { path: readyTemp, body: marker },
      ],
    },
    { op: 'move', source: envTemp, destination: paths.envFile },
    { op: 'move', source: readyTemp, destination: paths.readyFile },
  ];
}

/**
 * Removes the claim's files; `present` are the names the folder holds (from a listing). A pod that `served` a
 * claim (this process saw it claimed, or its files were there) is then marked recycled, with `mark` as the
 * mark's content (recycle.ts); a mark already there is left as it is.
 */
export function clearingSteps(
  paths: EnvPaths,
  present: readonly string[],
  served: boolean,
  mark: string,
  nonce: string,
): DeliveryStep[] {
  const steps: DeliveryStep[] = [];
  const names = new Set(present);
  if (names.has(READY_FILE_NAME)) steps.push({ op: 'remove', path: paths.readyFile });
  if (names.has(ENV_FILE_NAME)) steps.push({ op: 'remove', path: paths.envFile });
  for (const name of [...names].filter(isTempName).sort())
    steps.push({ op: 'remove', path: posix.join(paths.dir, name) });
  if ((served || names.has(READY_FILE_NAME) || names.has(ENV_FILE_NAME)) && !names.has(RECYCLED_FILE_NAME)) {
    const temp = tempPath(paths.recycledFile, nonce);
    steps.push(
      { op: 'upload', files: [{ path: temp, body: mark }] },
      { op: 'move', source: temp, destination: paths.recycledFile },
    );
  }
  return steps;
}

/**
 * How envd lists a FIFO: neither a file, a folder nor a symlink, so FILE_TYPE_UNSPECIFIED, which its JSON
 * leaves out as the enum's default ('').
 */
const FIFO_TYPES = new Set(['', 'FILE_TYPE_UNSPECIFIED']);

/**
 * The byte that wakes the wrappers waiting on the pod's .env_wake FIFO (docs/env-file.md), once .env_ready is
 * in place; none unless the listing shows a FIFO there. envd uploads as root, following a symlink and
 * truncating a regular file, so a wake is never sent to anything the folder's other writers could have put
 * there instead of the wrapper's FIFO.
 */
export function wakeStep(
  paths: EnvPaths,
  entries: readonly { name: string; type: string }[],
): DeliveryStep | undefined {
  const wake = entries.find((entry) => entry.name === WAKE_FILE_NAME);
  if (wake === undefined || !FIFO_TYPES.has(wake.type)) return undefined;
  return { op: 'upload', files: [{ path: paths.wakeFile, body: '\n' }] };
}
