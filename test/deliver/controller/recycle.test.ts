import { describe, expect, it } from 'vitest';
import type { DeliveryPod } from '../../../src/deliver/controller/claim.js';
import {
  markedInstances,
  recycledMark,
  restartedSince,
  wrappedInstances,
  type WrappedInstance,
} from '../../../src/deliver/controller/recycle.js';

const STATUS = 'agents.kruise.io/runtime-injection-status';

function podWith(wrapped: string[], statuses: unknown): DeliveryPod {
  return {
    metadata: { uid: 'p', annotations: { [STATUS]: JSON.stringify({ wrapped }) } },
    spec: { containers: [] },
    status: { phase: 'Running', containerStatuses: statuses },
  };
}

const running = (name: string, id: string) => ({ name, containerID: id, state: { running: { startedAt: 'x' } } });
const waiting = (name: string, id: string) => ({
  name,
  containerID: id,
  state: { waiting: { reason: 'CrashLoopBackOff' } },
});

describe('wrappedInstances', () => {
  it('reads each wrapped container from its status, and only the wrapped ones', () => {
    const pod = podWith(
      ['main', 'tool'],
      [running('main', 'c://1'), waiting('tool', 'c://2'), running('envd', 'c://3')],
    );
    expect(wrappedInstances(pod)).toEqual([
      { name: 'main', id: 'c://1', running: true },
      { name: 'tool', id: 'c://2', running: false },
    ]);
  });

  it('takes a wrapped container without a status, or a status of the wrong shape, as not running', () => {
    for (const statuses of [undefined, null, 'x', [null, 7], [{ name: 'main', containerID: 7, state: null }]])
      expect(wrappedInstances(podWith(['main'], statuses))).toEqual([{ name: 'main', id: undefined, running: false }]);
  });

  it('takes no container ID that could not be one word of the mark', () => {
    const forged = podWith(['main'], [running('main', 'c://1\ncontainer main c://2')]);
    expect(wrappedInstances(forged)).toEqual([{ name: 'main', id: undefined, running: true }]);
  });
});

describe('the recycled mark', () => {
  const served: WrappedInstance[] = [
    { name: 'main', id: 'containerd://aaa', running: true },
    { name: 'tool', id: undefined, running: false },
  ];

  it('names the instances that served the claim, and reads back as them', () => {
    const mark = recycledMark(served);
    expect(mark).toMatch(/^a claim ended here;.*\ncontainer main containerd:\/\/aaa\n$/);
    expect([...markedInstances(mark)]).toEqual(['containerd://aaa']);
  });

  it('names nothing by a line of another shape', () => {
    expect([...markedInstances('container main\ncontainer  x\nid containerd://a\ncontainer a b c\n')]).toEqual([]);
  });

  it('is passed once every wrapped container runs as an instance it does not name', () => {
    const mark = recycledMark(served);
    const now = (main: WrappedInstance, tool: WrappedInstance) => restartedSince(mark, [main, tool]);
    const tool = { name: 'tool', id: 'containerd://ccc', running: true };
    expect(now({ name: 'main', id: 'containerd://aaa', running: true }, tool)).toBe(false);
    expect(now({ name: 'main', id: 'containerd://bbb', running: false }, tool)).toBe(false);
    expect(now({ name: 'main', id: undefined, running: true }, tool)).toBe(false);
    expect(now({ name: 'main', id: 'containerd://bbb', running: true }, { ...tool, running: false })).toBe(false);
    expect(now({ name: 'main', id: 'containerd://bbb', running: true }, tool)).toBe(true);
  });

  it('is never passed by a pod without wrapped containers', () => {
    expect(restartedSince(recycledMark([]), [])).toBe(false);
  });
});
