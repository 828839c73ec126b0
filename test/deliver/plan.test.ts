import { describe, expect, it } from 'vitest';
import { clearingSteps, deliverySteps, envPaths, isTempName, tempPath } from '../../src/deliver/plan.js';

const paths = envPaths('/var/sandbox');

describe('deliverySteps', () => {
  it('writes nothing when .env_ready already names this content', () => {
    expect(deliverySteps(paths, { found: true, body: 'sha256:abc\n' }, 'X=1\n', 'sha256:abc\n', 'n1')).toEqual([]);
  });

  it.each([
    ['absent', { found: false } as const],
    ['of another content', { found: true, body: 'sha256:old\n' } as const],
  ])('with .env_ready %s, moves each file into place from a name of its own, env.sh first', (_what, ready) => {
    const steps = deliverySteps(paths, ready, 'X=1\n', 'sha256:new\n', '0123456789abcdef');
    const finals = steps.filter((s) => s.op === 'move').map((s) => s.op === 'move' && s.destination);
    expect(finals).toEqual(['/var/sandbox/env.sh', '/var/sandbox/.env_ready']);
    // Nothing is ever uploaded under a final name: envd would follow a symlink there and truncate in place.
    for (const step of steps) if (step.op === 'upload') expect(finals).not.toContain(step.path);
    for (const step of steps)
      if (step.op === 'move')
        expect(steps).toContainEqual(expect.objectContaining({ op: 'upload', path: step.source }));
    expect(steps).toContainEqual({
      op: 'upload',
      path: expect.stringMatching(/^\/var\/sandbox\/\.env\.sh\.0123456789abcdef\.tmp$/) as unknown,
      body: 'X=1\n',
    });
    expect(steps).toContainEqual({
      op: 'upload',
      path: expect.stringMatching(/\.env_ready\.0123456789abcdef\.tmp$/) as unknown,
      body: 'sha256:new\n',
    });
  });

  it('gives two attempts two different temporary names', () => {
    const one = deliverySteps(paths, { found: false }, 'X=1\n', 'm', 'aaaaaaaaaaaaaaaa');
    const two = deliverySteps(paths, { found: false }, 'X=1\n', 'm', 'bbbbbbbbbbbbbbbb');
    const uploads = (steps: typeof one) => steps.flatMap((s) => (s.op === 'upload' ? [s.path] : []));
    expect(uploads(one).filter((p) => uploads(two).includes(p))).toEqual([]);
  });
});

describe('clearingSteps', () => {
  it('removes .env_ready first, then env.sh, then the temporary files, and nothing else', () => {
    const present = [
      'run_with_envs.sh',
      'env.sh',
      '.env.sh.0123456789abcdef.tmp',
      '.env_ready',
      'notes.txt',
      '.env_ready.fedcba9876543210.tmp',
    ];
    expect(clearingSteps(paths, present)).toEqual([
      { op: 'remove', path: '/var/sandbox/.env_ready' },
      { op: 'remove', path: '/var/sandbox/env.sh' },
      { op: 'remove', path: '/var/sandbox/.env.sh.0123456789abcdef.tmp' },
      { op: 'remove', path: '/var/sandbox/.env_ready.fedcba9876543210.tmp' },
    ]);
  });

  it('has nothing to do in a folder without the claim files', () => {
    expect(clearingSteps(paths, ['run_with_envs.sh'])).toEqual([]);
  });

  it('knows its own temporary names, and only those', () => {
    expect(isTempName(tempPath('/var/sandbox/env.sh', 'abcdef0123456789').split('/').pop() ?? '')).toBe(true);
    expect(isTempName(tempPath('/var/sandbox/.env_ready', 'abcdef0123456789').split('/').pop() ?? '')).toBe(true);
    for (const name of ['.env.sh.tmp', 'env.sh', '.bashrc.0123456789abcdef.tmp', '.env.sh.../x.tmp'])
      expect(isTempName(name)).toBe(false);
  });
});
