/**
 * The plan's steps carried out on a pod's folder held in memory, as envd carries them out: an upload opens its
 * path and writes in place, following a symlink there; a Move renames over whatever is at the destination; a
 * Remove deletes the entry itself. What is checked is what the folder ends as, and what a wrapper looking at
 * it between two steps could find.
 */
import { posix } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { markerOf } from '../../../src/deliver/controller/claim.js';
import {
  clearingSteps,
  deliverySteps,
  envPaths,
  isTempName,
  tempPath,
  wakeStep,
  type DeliveryStep,
} from '../../../src/deliver/envd/plan.js';
import { ENV_FILE_NAME, READY_FILE_NAME, RECYCLED_FILE_NAME, WAKE_FILE_NAME } from '../../../src/wrapper/env-dir.js';

// Not the default folder: every path must come from the folder the plan is given.
const DIR = '/run/claim-env';
const paths = envPaths(DIR);
const ENV = posix.join(DIR, ENV_FILE_NAME);
const READY = posix.join(DIR, READY_FILE_NAME);
const RECYCLED = posix.join(DIR, RECYCLED_FILE_NAME);
/** What the pod's folder holds of its own, which no plan may touch. */
const OWN: readonly [string, Entry][] = [
  [posix.join(DIR, 'run_with_envs.sh'), { file: '#!/bin/bash\n' }],
  [posix.join(DIR, 'notes.txt'), { file: 'mine\n' }],
  [posix.join(DIR, '.env.sh.tmp'), { file: 'not a name of the plan\n' }],
  [posix.join(DIR, '.bashrc.0123456789abcdef.tmp'), { file: 'nor this\n' }],
];

type Entry = { file: string } | { link: string };
/** Every path of the pod, inside the folder and out. */
type Pod = Map<string, Entry>;

const nonce = fc.stringMatching(/^[0-9a-f]{16}$/);
const content = fc.string({ maxLength: 40 });

function podWith(...entries: [string, Entry][]): Pod {
  return new Map([...OWN, ...entries]);
}

/** What envd does, one thing at a time: an upload writes its files one after another. */
type Action = { op: 'write'; path: string; body: string } | Exclude<DeliveryStep, { op: 'upload' }>;

function actions(steps: readonly DeliveryStep[]): Action[] {
  return steps.flatMap((step): Action[] =>
    step.op === 'upload' ? step.files.map((file) => ({ op: 'write', path: file.path, body: file.body })) : [step],
  );
}

function apply(pod: Pod, action: Action): void {
  if (action.op === 'write') {
    const entry = pod.get(action.path);
    if (entry !== undefined && 'file' in entry) throw new Error(`${action.path} written in place while it may be read`);
    pod.set(entry === undefined ? action.path : entry.link, { file: action.body });
  } else if (action.op === 'move') {
    const entry = pod.get(action.source);
    if (entry === undefined) throw new Error(`Move of ${action.source}, which is not there`);
    pod.delete(action.source);
    pod.set(action.destination, entry);
  } else {
    pod.delete(action.path);
  }
}

/** Carries out `done` in order: the pod as a wrapper would find it after each one. */
function perform(pod: Pod, done: readonly Action[]): Pod[] {
  return done.map((action) => {
    apply(pod, action);
    return new Map(pod);
  });
}

/** Carries out `steps` in order, each file of an upload on its own. */
const carryOut = (pod: Pod, steps: readonly DeliveryStep[]): Pod[] => perform(pod, actions(steps));

/** What a reader of `path` gets: the file's content, or nothing (no file there, or a symlink). */
function fileAt(pod: Pod, path: string): string | undefined {
  const entry = pod.get(path);
  return entry !== undefined && 'file' in entry ? entry.file : undefined;
}

/** The names a ListDir of the folder shows. */
const listing = (pod: Pod): string[] =>
  [...pod.keys()].filter((path) => posix.dirname(path) === DIR).map((path) => posix.basename(path));

describe('deliverySteps, carried out', () => {
  it('leave env.sh with the content and .env_ready naming it, beside the folder as it was, and no temporary file', () => {
    fc.assert(
      fc.property(content, nonce, fc.option(content, { nil: undefined }), (text, n, before) => {
        const old: [string, Entry][] =
          before === undefined
            ? []
            : [
                [ENV, { file: before }],
                [READY, { file: markerOf(before) }],
              ];
        const pod = podWith(...old);
        const ready =
          before === undefined ? { found: false as const } : { found: true as const, body: markerOf(before) };
        carryOut(pod, deliverySteps(paths, ready, text, markerOf(text), n));
        expect(pod).toEqual(podWith([ENV, { file: text }], [READY, { file: markerOf(text) }]));
      }),
    );
  });

  it('never let a wrapper find .env_ready naming this content before env.sh holds all of it', () => {
    fc.assert(
      fc.property(content, content, nonce, (before, text, n) => {
        fc.pre(before !== text);
        const pod = podWith([ENV, { file: before }], [READY, { file: markerOf(before) }]);
        const seen = carryOut(
          pod,
          deliverySteps(paths, { found: true, body: markerOf(before) }, text, markerOf(text), n),
        );
        for (const state of seen) {
          // env.sh is always one whole content, old or new; the new marker only once the new content is in.
          expect([before, text]).toContain(fileAt(state, ENV));
          if (fileAt(state, READY) === markerOf(text)) expect(fileAt(state, ENV)).toBe(text);
        }
      }),
    );
  });

  it('replace a symlink planted at env.sh or .env_ready, never writing where it points', () => {
    const pod = podWith([ENV, { link: '/etc/shadow' }], [READY, { link: '/root/.bashrc' }]);
    pod.set('/etc/shadow', { file: 'root:x\n' });
    carryOut(pod, deliverySteps(paths, { found: false }, 'X=1\n', markerOf('X=1\n'), '0123456789abcdef'));
    expect(pod.get(ENV)).toEqual({ file: 'X=1\n' });
    expect(pod.get(READY)).toEqual({ file: markerOf('X=1\n') });
    expect(pod.get('/etc/shadow')).toEqual({ file: 'root:x\n' });
    expect(pod.has('/root/.bashrc')).toBe(false);
  });

  it('let two attempts of the same claim (a lease handover) interleave in any order and both succeed', () => {
    fc.assert(
      fc.property(
        content,
        nonce,
        nonce,
        fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }),
        (text, a, b, order) => {
          fc.pre(a !== b);
          const one = actions(deliverySteps(paths, { found: false }, text, markerOf(text), a));
          const two = actions(deliverySteps(paths, { found: false }, text, markerOf(text), b));
          const pod = podWith();
          for (const first of order) {
            const step = (first && one.length > 0) || two.length === 0 ? one.shift() : two.shift();
            if (step !== undefined) apply(pod, step);
          }
          expect(pod).toEqual(podWith([ENV, { file: text }], [READY, { file: markerOf(text) }]));
        },
      ),
    );
  });

  it('are one upload of both temporary files, env.sh then .env_ready, then their Moves in that order', () => {
    const steps = deliverySteps(paths, { found: false }, 'X=1\n', markerOf('X=1\n'), '0123456789abcdef');
    const envTemp = posix.join(DIR, '.env.sh.0123456789abcdef.tmp');
    const readyTemp = posix.join(DIR, '.env_ready.0123456789abcdef.tmp');
    expect(steps).toEqual([
      {
        op: 'upload',
        files: [
          { path: envTemp, body: 'X=1\n' },
          { path: readyTemp, body: markerOf('X=1\n') },
        ],
      },
      { op: 'move', source: envTemp, destination: ENV },
      { op: 'move', source: readyTemp, destination: READY },
    ]);
  });

  it('are none when .env_ready already names this content', () => {
    expect(deliverySteps(paths, { found: true, body: markerOf('X=1\n') }, 'X=1\n', markerOf('X=1\n'), 'n1')).toEqual(
      [],
    );
  });
});

describe('clearingSteps, carried out on what a ListDir shows', () => {
  it('leave the folder as it was before any claim but for the recycled mark, whatever step an interrupted delivery stopped at', () => {
    fc.assert(
      fc.property(content, content, nonce, nonce, fc.integer({ min: 0, max: 4 }), (before, text, n, m, done) => {
        const pod = podWith([ENV, { file: before }], [READY, { file: markerOf(before) }]);
        const delivery = deliverySteps(paths, { found: true, body: markerOf(before) }, text, markerOf(text), n);
        perform(pod, actions(delivery).slice(0, done));
        const seen = carryOut(pod, clearingSteps(paths, listing(pod), false, 'the mark\n', m));
        expect(pod).toEqual(podWith([RECYCLED, { file: expect.any(String) as unknown as string }]));
        // .env_ready goes first: no wrapper starts with what is being taken away.
        for (const state of seen) expect(state.has(READY)).toBe(false);
      }),
    );
  });

  it('are none in a folder without the claim files, of a pod this process never saw claimed', () => {
    expect(clearingSteps(paths, listing(podWith()), false, 'the mark\n', '0123456789abcdef')).toEqual([]);
  });

  it('mark a pod recycled once, through a temporary name, when it was seen claimed even without files', () => {
    const pod = podWith();
    const steps = clearingSteps(paths, listing(pod), true, 'the mark\n', '0123456789abcdef');
    expect(steps).toEqual([
      { op: 'upload', files: [{ path: tempPath(RECYCLED, '0123456789abcdef'), body: 'the mark\n' }] },
      { op: 'move', source: tempPath(RECYCLED, '0123456789abcdef'), destination: RECYCLED },
    ]);
    carryOut(pod, steps);
    expect(clearingSteps(paths, listing(pod), true, 'another mark\n', 'fedcba9876543210')).toEqual([]);
  });

  it("know every temporary name a plan makes, and none of the folder's own", () => {
    for (const name of [ENV, READY, RECYCLED])
      expect(isTempName(posix.basename(tempPath(name, '0123456789abcdef')))).toBe(true);
    for (const [path] of OWN) expect(isTempName(posix.basename(path))).toBe(false);
    expect(isTempName('.env_recycledX0123456789abcdef.tmp')).toBe(false);
  });
});

describe('wakeStep', () => {
  it.each([
    ['a FIFO, as envd lists one (no type)', '', true],
    ['a FIFO, with its type spelled out', 'FILE_TYPE_UNSPECIFIED', true],
    ['a regular file', 'FILE_TYPE_FILE', false],
    ['a symlink, which envd would follow', 'FILE_TYPE_SYMLINK', false],
    ['a folder', 'FILE_TYPE_DIRECTORY', false],
  ])('with the wake name listed as %s: a wake %s', (_what, type, wakes) => {
    const entries = [
      { name: 'run_with_envs.sh', type: 'FILE_TYPE_FILE' },
      { name: WAKE_FILE_NAME, type },
    ];
    expect(wakeStep(paths, entries)).toEqual(
      wakes ? { op: 'upload', files: [{ path: posix.join(DIR, WAKE_FILE_NAME), body: '\n' }] } : undefined,
    );
  });

  it('sends none when the folder has no wake FIFO', () => {
    expect(wakeStep(paths, [{ name: 'run_with_envs.sh', type: 'FILE_TYPE_FILE' }])).toBeUndefined();
  });
});
