import type { ReviewDeps } from '../admission/review.js';
import { parseConfigMapManifest } from '../sources/configmap-manifest.js';
import { InjectionConfigStore } from '../sources/injection-config.js';
import { runtimesFromAnnotations } from '../sources/pod-annotations.js';
import { type CliIo, readInput, writeLine } from './io.js';

/**
 * The review dependencies for a run without a cluster: the ConfigMap from a file (none given = the ConfigMap
 * does not exist), runtimes and policy from the pod's annotations.
 */
export async function offlineDeps(configFile: string | undefined, io: CliIo): Promise<ReviewDeps> {
  const store = new InjectionConfigStore();
  if (configFile !== undefined) {
    const data = parseConfigMapManifest(await readInput(configFile, io), configFile);
    for (const invalid of store.update(data).invalidKeys) {
      writeLine(io.stderr, `warning: ${configFile}: key "${invalid.key}" is invalid: ${invalid.message}`);
    }
  }
  return { config: () => store.snapshot(), selectRuntimes: runtimesFromAnnotations };
}
