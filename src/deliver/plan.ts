/**
 * The envd requests that bring a pod's env dir to the wanted content: pure. The wrapper reads env.sh only once
 * .env_ready exists, and an upload truncates its target in place, so:
 *
 * - .env_ready absent: nothing reads env.sh yet, so it is uploaded under its own name, then .env_ready;
 * - .env_ready present with another content's marker: a wrapped command or probe may be reading env.sh, so the
 *   new content goes to a temporary name and is moved onto env.sh (a rename: no reader sees half a file), then
 *   .env_ready gets the new marker;
 * - .env_ready holding this content's marker: delivered already (by this process or an earlier one), no request.
 */
import { posix } from 'node:path';
import { ENV_FILE_NAME, READY_FILE_NAME } from '../envfile/write-env-file.js';

export type DeliveryStep =
  { op: 'upload'; path: string; body: string } | { op: 'move'; source: string; destination: string };

/** What GET .env_ready found: no file, or its content (bounded by the client). */
export type ReadyState = { found: false } | { found: true; body: string };

const TEMP_NAME = '.env.sh.tmp';

export interface EnvPaths {
  envFile: string;
  readyFile: string;
  tempFile: string;
}

export function envPaths(envDir: string): EnvPaths {
  return {
    envFile: posix.join(envDir, ENV_FILE_NAME),
    readyFile: posix.join(envDir, READY_FILE_NAME),
    tempFile: posix.join(envDir, TEMP_NAME),
  };
}

export function deliverySteps(paths: EnvPaths, ready: ReadyState, content: string, marker: string): DeliveryStep[] {
  if (ready.found && ready.body === marker) return [];
  const readyStep: DeliveryStep = { op: 'upload', path: paths.readyFile, body: marker };
  if (!ready.found) return [{ op: 'upload', path: paths.envFile, body: content }, readyStep];
  return [
    { op: 'upload', path: paths.tempFile, body: content },
    { op: 'move', source: paths.tempFile, destination: paths.envFile },
    readyStep,
  ];
}
