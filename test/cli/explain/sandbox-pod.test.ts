import { describe, expect, it } from 'vitest';
import { podFromSandboxTemplate } from '../../../src/cli/explain/sandbox-pod.js';
import { podFromSandbox, type SandboxObject } from '../../e2e/support/sandbox-controller.js';

const sandbox: SandboxObject = {
  metadata: { name: 'sbx-1', namespace: 'team-a', uid: 'uid-1' },
  spec: {
    runtimes: [{ name: 'agent-runtime' }],
    template: {
      metadata: { labels: { app: 'a' }, annotations: { 'example.com/team': 'e2e' } },
      spec: { containers: [{ name: 'main', image: 'python:3.12' }] },
    },
  },
};

describe('podFromSandboxTemplate', () => {
  it("lays the pod out as the e2e suite's Sandbox controller does, apart from the revision label it cannot know", () => {
    const controllers = podFromSandbox(sandbox) as { metadata: { labels: Record<string, string> } };
    delete controllers.metadata.labels['pod-template-hash'];
    expect(podFromSandboxTemplate(sandbox)).toEqual(controllers);
  });

  it('copies the template, so the Sandbox read from the API is never changed', () => {
    const copy = structuredClone(sandbox);
    const pod = podFromSandboxTemplate(copy);
    pod.spec.containers.push({ name: 'added' });
    expect(copy).toEqual(sandbox);
  });

  it('gives a pod with no containers for a Sandbox without a template', () => {
    const bare = { metadata: { name: 's', namespace: 'n', uid: 'u' }, spec: {} };
    expect(podFromSandboxTemplate(bare).spec).toEqual({ containers: [] });
  });
});
