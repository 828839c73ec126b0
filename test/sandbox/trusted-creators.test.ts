/** --trusted-creators: who may create pods that claim a Sandbox as their controller owner. */
import { describe, expect, it } from 'vitest';
import { reviewAdmission } from '../../src/admission/review.js';
import type { AdmissionRequest } from '../../src/kube-shapes/admission-review.js';
import { parseServeOptions } from '../../src/cli/serve/options.js';
import type { Pod } from '../../src/injection/index.js';
import { runtimesFromOwner, type Sandbox, type SandboxLookup } from '../../src/admission/sandbox-runtimes.js';
import { isTrustedCreator, readTrustedCreators, type TrustedCreators } from '../../src/sandbox/trusted-creators.js';

/** The list as the options read it; a test of a list they refuse fails here. */
function parseTrustedCreators(list: string): TrustedCreators {
  const reading = readTrustedCreators(list);
  if (!reading.ok) throw new Error(reading.problem);
  return reading.creators;
}

const CONTROLLER = 'system:serviceaccount:sandbox-system:sandbox-controller-manager';
const SA_GROUPS = ['system:serviceaccounts', 'system:serviceaccounts:sandbox-system', 'system:authenticated'];
const owner = { apiVersion: 'agents.kruise.io/v1alpha1', kind: 'Sandbox', name: 'sbx', uid: 'uid-1', controller: true };
const stored: Sandbox = {
  metadata: { name: 'sbx', namespace: 'team-a', uid: 'uid-1' },
  spec: { runtimes: [{ name: 'csi' }] },
};

function request(userInfo?: unknown): AdmissionRequest {
  const base: AdmissionRequest = {
    uid: 'u',
    kind: { group: '', version: 'v1', kind: 'Pod' },
    operation: 'CREATE',
    namespace: 'team-a',
  };
  // userInfo goes in as the wire would carry it, malformed shapes included.
  return userInfo === undefined ? base : ({ ...base, userInfo } as AdmissionRequest);
}

function pod(owned = true): Pod {
  return {
    metadata: {
      generateName: 'sbx-',
      annotations: { 'agents.kruise.io/runtimes': 'agent-runtime' },
      ...(owned ? { ownerReferences: [owner] } : {}),
    },
    spec: { containers: [{ name: 'main' }] },
  };
}

function lookup(): SandboxLookup & { calls: number } {
  const fn = Object.assign(
    (): Promise<Sandbox | undefined> => {
      fn.calls += 1;
      return Promise.resolve(stored);
    },
    { calls: 0 },
  );
  return fn;
}

const trusted = parseTrustedCreators(`${CONTROLLER},group:sandbox-controllers`);

describe('the --trusted-creators syntax', () => {
  it('reads plain and user: entries as user names and group: entries as groups, trimmed', () => {
    const parsed = parseTrustedCreators(` ${CONTROLLER} , group:team-a,group: team b ,user:group:odd, user:alice `);
    expect([...parsed.users]).toEqual([CONTROLLER, 'group:odd', 'alice']);
    expect([...parsed.groups]).toEqual(['team-a', 'team b']);
  });

  it('is read from the flag and from SANDBOX_INJECTOR_TRUSTED_CREATORS; the flag wins, an empty variable is unset', () => {
    const options = (argv: string[], env: NodeJS.ProcessEnv = {}) => {
      const parsed = parseServeOptions(argv, env);
      if (parsed.kind !== 'options') throw new Error('expected options');
      return parsed.options;
    };
    expect(options([]).trustedCreators).toBeUndefined();
    expect(options([], { SANDBOX_INJECTOR_TRUSTED_CREATORS: '' }).trustedCreators).toBeUndefined();
    expect(options([], { SANDBOX_INJECTOR_TRUSTED_CREATORS: 'group:a' }).trustedCreators).toBe('group:a');
    expect(
      options(['--trusted-creators', `${CONTROLLER},group:a`], { SANDBOX_INJECTOR_TRUSTED_CREATORS: 'b' })
        .trustedCreators,
    ).toBe(`${CONTROLLER},group:a`);
  });

  // The option schema and the parser are two readings of one syntax: every value must get the same verdict.
  it.each([
    ['alice', true],
    [`${CONTROLLER}, group:system:serviceaccounts:sandbox-system`, true],
    ['user:group:odd', true],
    ['group:user:', true],
    ['', false],
    [' ', false],
    ['alice,', false],
    [',alice', false],
    ['alice,,bob', false],
    ['alice, ,bob', false],
    ['group:', false],
    ['alice,group:  ', false],
    ['user:', false],
    ['user: ,alice', false],
  ])('%j: accepted %s by the options and the parser alike', (value, accepted) => {
    const parsed = parseServeOptions(['--trusted-creators', value], {});
    const problems = parsed.kind === 'refused' ? parsed.problems : [];
    expect(problems.length === 0).toBe(accepted);
    if (!accepted)
      expect(problems).toEqual([expect.stringMatching(/^--trusted-creators \(SANDBOX_INJECTOR_TRUSTED_CREATORS\): /)]);
    expect(readTrustedCreators(value).ok).toBe(accepted);
  });
});

describe('a list the options refuse', () => {
  it.each([
    ['a,,b', 'entry 2 of "a,,b" is empty'],
    ['alice,', 'entry 2 of "alice," is empty'],
    ['group: ,alice', 'entry 1 of "group: ,alice" has "group:" and no name after it'],
  ])('%j: the message says which entry and what to write, not the grammar', (value, what) => {
    expect(parseServeOptions(['--trusted-creators', value], {})).toEqual({
      kind: 'refused',
      problems: [
        `--trusted-creators (SANDBOX_INJECTOR_TRUSTED_CREATORS): ${what}: give NAME, user:NAME or group:NAME, separated by commas`,
      ],
    });
  });

  it('is read once: the options carry the creators they read', () => {
    const parsed = parseServeOptions(['--trusted-creators', 'alice,group:team-a'], {});
    if (parsed.kind !== 'options') throw new Error('no options');
    expect(parsed.options.trusted).toEqual({ users: new Set(['alice']), groups: new Set(['team-a']) });
  });
});

describe('matching the review userInfo', () => {
  it.each<[string, unknown, boolean]>([
    ['the listed user name', { username: CONTROLLER, groups: SA_GROUPS }, true],
    [
      'a listed group, under another user name',
      { username: 'carol', groups: ['system:authenticated', 'sandbox-controllers'] },
      true,
    ],
    ['a listed group without a user name', { groups: ['sandbox-controllers'] }, true],
    ['another user', { username: 'mallory', groups: ['system:authenticated'] }, false],
    ['the user name in another case', { username: CONTROLLER.toUpperCase() }, false],
    ['a group named like the listed user', { username: 'mallory', groups: [CONTROLLER] }, false],
    ['a user named like the listed group', { username: 'sandbox-controllers' }, false],
    ['no userInfo', undefined, false],
    ['an empty userInfo', {}, false],
    ['userInfo of the wrong type', 'system:masters', false],
    ['groups that are not a list', { username: 'mallory', groups: 'sandbox-controllers' }, false],
    ['a user name that is not a string', { username: [CONTROLLER] }, false],
  ])('%s: trusted %s', (_, userInfo, expected) => {
    expect(isTrustedCreator(trusted, userInfo)).toBe(expected);
  });
});

describe('runtimes from the owning Sandbox, with trusted creators', () => {
  const select = (userInfo: unknown, list: TrustedCreators | undefined, owned = true, allowAnnotations = false) => {
    const sandboxes = lookup();
    return runtimesFromOwner(pod(owned), request(userInfo), sandboxes, allowAnnotations, list).then((selection) => ({
      selection,
      lookups: sandboxes.calls,
    }));
  };

  it('gives the Sandbox runtimes to a pod from a trusted user name', async () => {
    expect(await select({ username: CONTROLLER, groups: SA_GROUPS }, trusted)).toEqual({
      selection: { ok: true, runtimes: ['csi'], policy: 'None', source: 'Sandbox team-a/sbx: spec.runtimes' },
      lookups: 1,
    });
  });

  it('gives the Sandbox runtimes to a pod from a member of a trusted group', async () => {
    expect(await select({ username: 'carol', groups: ['sandbox-controllers'] }, trusted)).toMatchObject({
      selection: { ok: true, runtimes: ['csi'] },
      lookups: 1,
    });
  });

  it('denies a pod from anyone else with 403, naming the user, before the Sandbox is looked up', async () => {
    expect(await select({ username: 'mallory', groups: ['system:authenticated'] }, trusted)).toEqual({
      selection: {
        ok: false,
        denial: {
          code: 'SI_CREATOR_UNTRUSTED',
          status: 403,
          message:
            'user "mallory" may not create a pod owned by Sandbox team-a/sbx: ' +
            "only the webhook's trusted creators may (--trusted-creators)",
        },
      },
      lookups: 0,
    });
  });

  it('denies a review without userInfo, saying it names no user', async () => {
    expect(await select(undefined, trusted)).toEqual({
      selection: {
        ok: false,
        denial: {
          code: 'SI_CREATOR_UNTRUSTED',
          status: 403,
          message:
            'a request without a user name may not create a pod owned by Sandbox team-a/sbx: ' +
            "only the webhook's trusted creators may (--trusted-creators)",
        },
      },
      lookups: 0,
    });
  });

  it('quotes the user name and cuts a long one, so the message and its log line stay one bounded line', async () => {
    const { selection } = await select({ username: `eve"\n${'x'.repeat(100_000)}` }, trusted);
    expect(selection.ok).toBe(false);
    const message = selection.ok ? '' : selection.denial.message;
    expect(message).toMatch(/^user "eve\\"\\nx+\.\.\." may not create a pod owned by Sandbox team-a\/sbx: /);
    expect(message).not.toContain('\n');
    expect(message.length).toBeLessThan(400);
  });

  it('trusts every creator when the flag is unset, even a review without userInfo', async () => {
    expect(await select({ username: 'mallory' }, undefined)).toMatchObject({
      selection: { ok: true, runtimes: ['csi'] },
      lookups: 1,
    });
    expect(await select(undefined, undefined)).toMatchObject({
      selection: { ok: true, runtimes: ['csi'] },
      lookups: 1,
    });
  });

  it('leaves pods without a Sandbox owner alone: nothing, or their annotations when allowed', async () => {
    const mallory = { username: 'mallory' };
    expect(await select(mallory, trusted, false)).toEqual({
      selection: { ok: true, runtimes: [], policy: 'None', source: 'no Sandbox owner' },
      lookups: 0,
    });
    expect(await select(mallory, trusted, false, true)).toMatchObject({
      selection: { ok: true, runtimes: ['agent-runtime'] },
    });
  });

  it('reaches kube-apiserver as a denied AdmissionReview with status 403', async () => {
    const review = {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: { ...request({ username: 'mallory', groups: ['system:authenticated'] }), object: pod() },
    };
    const outcome = await reviewAdmission(review, {
      config: () => ({ present: false, name: 'sandbox-system/sandbox-injection-config' }),
      selectRuntimes: (p, r) => runtimesFromOwner(p, r, lookup(), false, trusted),
    });
    expect(outcome).toMatchObject({
      kind: 'response',
      review: {
        response: {
          uid: 'u',
          allowed: false,
          status: {
            code: 403,
            reason: 'Forbidden',
            message: expect.stringMatching(
              /^user "mallory" may not create a pod owned by Sandbox team-a\/sbx/,
            ) as unknown,
          },
        },
      },
      summary: { decision: 'denied' },
    });
  });
});
