/**
 * A recycled pod: one that served a claim and lives on unclaimed, to be claimed again (upstream's recycle
 * returns a claimed sandbox to its pool). Its files go when the claim ends, but the processes that claim
 * started hold its variables, so the next claim may go into the pod only once none of them can be running.
 *
 * Clearing leaves `.env_recycled` in the env folder, naming the wrapped containers as the kubelet reported
 * them then, and wakes the wrappers. Each wrapper supervising a command ends it and exits, so the kubelet
 * restarts its container into a new wait (src/wrapper/run_with_envs.sh); the PID namespace goes with the
 * container, and every process of the last claim with it. The next claim is delivered once every wrapped
 * container runs as an instance the mark does not name: restarted since, by the kubelet's word, not by
 * anything a process in the pod can write.
 *
 * How a recycled pod is treated (`--recycled-pods`):
 * - restart: as above; a pod whose containers do not restart gets no claim, and a Warning says so;
 * - recreate: never another claim (tenants whose code runs as root there: docs/deliver-env.md);
 * - any: the claim goes in at once (the operator's own recycler restarts the sandbox).
 */
import { recordedStatus } from '../../sandbox/injection-status.js';
import type { Pod } from '../../kube-shapes/kubernetes.js';

export const RECYCLED_POD_MODES = ['restart', 'recreate', 'any'] as const;
export type RecycledPodMode = (typeof RECYCLED_POD_MODES)[number];

/** One word of printable ASCII: what a mark's line holds in each of its fields. */
const WORD = /^[\x21-\x7e]+$/;

/** A wrapped container as the kubelet reports it: the instance (its container ID), and whether it runs. */
export interface WrappedInstance {
  name: string;
  id: string | undefined;
  running: boolean;
}

/** The pod's wrapped containers (the status annotation's `wrapped`), each as its container status says. */
export function wrappedInstances(pod: Pod): WrappedInstance[] {
  const statuses = containerStatuses(pod);
  return recordedStatus(pod).wrapped.map((name) => {
    const status = statuses.find((candidate) => candidate.name === name);
    // A container ID is `runtime://hex`; anything else (a space, a line break) could not be written in the mark.
    const id =
      typeof status?.containerID === 'string' && WORD.test(status.containerID) ? status.containerID : undefined;
    const running = status?.state?.running !== undefined && status.state.running !== null;
    return { name, id, running };
  });
}

/** The mark's content: a line for people, then one `container NAME ID` line per wrapped container seen. */
export function recycledMark(instances: readonly WrappedInstance[]): string {
  const lines = instances
    .filter((instance) => instance.id !== undefined && WORD.test(instance.name))
    .map((instance) => `container ${instance.name} ${instance.id}\n`);
  return `a claim ended here; the next one waits until these containers have restarted\n${lines.join('')}`;
}

/** The container IDs a mark names; a line that is not `container NAME ID` names nothing. */
export function markedInstances(mark: string): Set<string> {
  const ids = new Set<string>();
  for (const line of mark.split('\n')) {
    const [word, name, id, ...rest] = line.split(' ');
    if (word === 'container' && name && id && rest.length === 0) ids.add(id);
  }
  return ids;
}

/**
 * True when no process of the claim the mark was left for can be running: every wrapped container runs as an
 * instance the mark does not name. A container that is not running yet (restarting, or in a backoff) is not
 * a yes: the claim waits for it, and its start changes what the decision is made on.
 */
export function restartedSince(mark: string, instances: readonly WrappedInstance[]): boolean {
  const marked = markedInstances(mark);
  return (
    instances.length > 0 &&
    instances.every((instance) => instance.running && instance.id !== undefined && !marked.has(instance.id))
  );
}

interface ContainerStatus {
  name?: unknown;
  containerID?: unknown;
  state?: { running?: unknown };
}

function containerStatuses(pod: Pod): ContainerStatus[] {
  const status = (pod as { status?: unknown }).status;
  if (status === null || typeof status !== 'object') return [];
  const list = (status as { containerStatuses?: unknown }).containerStatuses;
  return Array.isArray(list)
    ? list.filter((item): item is ContainerStatus => item !== null && typeof item === 'object')
    : [];
}
