import { JsonPointers, type ReviewDeps } from '../admission/review.js';
import { POSTSTART_CONFLICT_MODES, type PostStartConflict } from '../injection/index.js';
import { parseConfigMapManifest } from '../config/configmap-manifest.js';
import { InjectionConfigStore } from '../config/injection-config.js';
import { runtimesFromAnnotations } from '../sandbox/runtime-selection.js';
import { UsageError } from './command.js';
import { type CliIo, readInput, writeLine } from './io.js';

/** The flag review and inject share with serve, as parseArgs options. */
export const POSTSTART_CONFLICT_FLAG = { 'poststart-conflict': { type: 'string', default: 'skip' } } as const;
/** The flags of the commands that read one file (review, inject): its path, the config file, the postStart rule. */
export const FILE_COMMAND_FLAGS = {
  'config-file': { type: 'string' },
  filename: { type: 'string', short: 'f', default: '-' },
  ...POSTSTART_CONFLICT_FLAG,
} as const;
export const POSTSTART_CONFLICT_USAGE = `[--poststart-conflict ${POSTSTART_CONFLICT_MODES.join('|')}]`;
/** The `--help` lines of the flags review, inject and explain share. */
export const POSTSTART_CONFLICT_HELP = [
  `--poststart-conflict ${POSTSTART_CONFLICT_MODES.join('|')}`,
  'main container and agent-runtime both have a postStart hook: skip the runtime (default), or chain the hooks',
] as const;
export const CONFIG_FILE_HELP = [
  '--config-file CONFIGMAP',
  'the injection ConfigMap manifest (YAML or JSON); without it, as if the ConfigMap does not exist',
] as const;

/**
 * The review dependencies for a run without a cluster: the ConfigMap from a file (none given = the ConfigMap
 * does not exist), runtimes and policy from the pod's annotations. Several files are successive versions of the
 * ConfigMap, oldest first, read as the server's watch reads changes: a key that is bad in the last one keeps its
 * last valid version from an earlier one.
 */
export async function offlineDeps(
  configFiles: string | readonly string[] | undefined,
  postStartConflict: string,
  io: CliIo,
): Promise<ReviewDeps> {
  if (!isPostStartConflict(postStartConflict)) {
    throw new UsageError(
      `--poststart-conflict: "${postStartConflict}" is not one of ${POSTSTART_CONFLICT_MODES.join(', ')}`,
    );
  }
  const store = new InjectionConfigStore();
  for (const configFile of typeof configFiles === 'string' ? [configFiles] : (configFiles ?? [])) {
    const data = parseConfigMapManifest(await readInput(configFile, io), configFile);
    const report = store.update(data);
    for (const invalid of report.invalidKeys) {
      writeLine(io.stderr, `warning: ${configFile}: key "${invalid.key}" is invalid: ${invalid.message}`);
    }
    for (const { key, fields } of report.unknownFields) {
      writeLine(io.stderr, `warning: ${configFile}: key "${key}": unknown fields ignored: ${fields.join(', ')}`);
    }
  }
  return {
    config: () => store.snapshot(),
    selectRuntimes: runtimesFromAnnotations,
    postStartConflict,
    pointers: new JsonPointers(),
  };
}

function isPostStartConflict(value: string): value is PostStartConflict {
  return (POSTSTART_CONFLICT_MODES as readonly string[]).includes(value);
}
