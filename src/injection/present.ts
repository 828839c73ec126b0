import type { Container, ContainerList, Pod, RuntimeConfig } from './types.js';
import { AGENT_RUNTIME, CSI } from './types.js';

/** The containers a runtime's config adds, each with the pod list it goes to. */
function runtimeContainers(runtime: string, config: RuntimeConfig): { list: ContainerList; container: Container }[] {
  const into = (list: ContainerList, containers: readonly Container[] | undefined) =>
    (containers ?? []).map((container) => ({ list, container }));
  if (runtime === AGENT_RUNTIME || runtime === CSI) return into('initContainers', config.csiSidecar);
  return [...into('initContainers', config.initContainers), ...into('containers', config.containers)];
}

/**
 * Whether the runtime is already in the pod: every container its config adds is there, in the same list, with
 * the same name and image. That is what the Sandbox controller leaves when it injected the runtime itself before
 * creating the pod. A runtime whose config adds no container can never be told apart from an absent one.
 */
export function isPresent(pod: Pod, runtime: string, config: RuntimeConfig): boolean {
  const wanted = runtimeContainers(runtime, config);
  return (
    wanted.length > 0 &&
    wanted.every(({ list, container }) =>
      (pod.spec[list] ?? []).some((c) => c.name === container.name && c.image === container.image),
    )
  );
}
