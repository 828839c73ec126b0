import { describe, expect, it } from 'vitest';
import { PodEditor, relativePath } from '../../src/injection/editor.js';
import type { Pod } from '../../src/injection/index.js';
import { freezeAll } from '../support/freeze-all.js';
import { applyStrict } from '../support/strict-patch.js';

function pod(): Pod {
  return freezeAll({
    metadata: { name: 'p', annotations: { a: '1' } },
    spec: {
      containers: [
        { name: 'main', command: ['run'], livenessProbe: { exec: { command: ['check'] } } },
        { name: 'other', command: ['go'], volumeMounts: [{ name: 'v', mountPath: '/v' }] },
      ],
    },
  });
}

const COMMAND = relativePath(['command']);
const PROBE_COMMAND = relativePath(['livenessProbe', 'exec', 'command']);
const ESCAPED = relativePath(['a/b~c']);

describe('PodEditor', () => {
  it('records each edit as the operation that makes it, and leaves the original alone (it is frozen)', () => {
    const original = pod();
    const editor = new PodEditor(original);
    editor.append(['spec', 'containers', 0, 'env'], [{ name: 'E', value: 'x' }]);
    const main = editor.at(['spec', 'containers', 0]);
    main.set('args', ['a']);
    main.child('livenessProbe').child('exec').set('command', ['wrapped']);
    editor.setEntry('annotations', 'b/c', '2');

    expect(editor.operations).toEqual([
      { op: 'add', path: '/spec/containers/0/env', value: [] },
      { op: 'add', path: '/spec/containers/0/env/0', value: { name: 'E', value: 'x' } },
      { op: 'add', path: '/spec/containers/0/args', value: ['a'] },
      { op: 'replace', path: '/spec/containers/0/livenessProbe/exec/command', value: ['wrapped'] },
      { op: 'add', path: '/metadata/annotations/b~1c', value: '2' },
    ]);
    expect(applyStrict(original, editor.operations)).toEqual(editor.result());
    // Untouched parts stay shared with the original.
    expect(editor.result().spec.containers[1]).toBe(original.spec.containers[1]);
  });

  it('makes final edits without copying what they change, and applies them when the whole pod is asked for', () => {
    const original = pod();
    const editor = new PodEditor(original);
    editor.append(['spec', 'containers', 1, 'env'], [{ name: 'E', value: 'x' }]);
    const viewBefore = editor.pod;

    const main = editor.finalPlace(['spec', 'containers', 0]);
    main.set(COMMAND, ['w', 'run']);
    main.set(PROBE_COMMAND, ['w', 'check']);
    main.set(ESCAPED, 'odd key');
    main.append('volumeMounts', [{ name: 's', mountPath: '/s' }]);
    editor.finalPlace(['spec', 'containers', 1]).append('volumeMounts', [{ name: 's', mountPath: '/s' }]);

    expect(editor.operations.slice(2)).toEqual([
      { op: 'replace', path: '/spec/containers/0/command', value: ['w', 'run'] },
      { op: 'replace', path: '/spec/containers/0/livenessProbe/exec/command', value: ['w', 'check'] },
      { op: 'add', path: '/spec/containers/0/a~1b~0c', value: 'odd key' },
      { op: 'add', path: '/spec/containers/0/volumeMounts', value: [] },
      { op: 'add', path: '/spec/containers/0/volumeMounts/0', value: { name: 's', mountPath: '/s' } },
      { op: 'add', path: '/spec/containers/1/volumeMounts/1', value: { name: 's', mountPath: '/s' } },
    ]);
    // Nothing was copied for them: the container they change is still the original's in the view.
    expect(viewBefore.spec.containers[0]).toBe(original.spec.containers[0]);

    const result = editor.result();
    expect(result).toEqual(applyStrict(original, editor.operations));
    expect(result.spec.containers[0]?.command).toEqual(['w', 'run']);
    expect(result.spec.containers[1]?.volumeMounts).toHaveLength(2);
  });

  it('refuses another edit or a read of the view after final edits, until result() has applied them', () => {
    const editor = new PodEditor(pod());
    editor.finalPlace(['spec', 'containers', 0]).set(COMMAND, ['w']);
    expect(() => editor.pod).toThrow(/not read after final edits/);
    expect(() => editor.set(['spec', 'restartPolicy'], 'Never')).toThrow(/no edit follows final edits/);
    expect(() => editor.setEntry('annotations', 'x', 'y')).toThrow(/final edits/);

    expect(editor.result().spec.containers[0]?.command).toEqual(['w']);
    editor.set(['spec', 'restartPolicy'], 'Never');
    expect(editor.pod.spec.restartPolicy).toBe('Never');
    expect(editor.operations.map((o) => o.path)).toEqual(['/spec/containers/0/command', '/spec/restartPolicy']);
  });
});
