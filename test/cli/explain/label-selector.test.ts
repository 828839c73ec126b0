import { describe, expect, it } from 'vitest';
import { evaluateSelector, type LabelSelector } from '../../../src/cli/explain/label-selector.js';

const labels = { app: 'web', tier: 'front', empty: '' };

describe('evaluateSelector', () => {
  it.each<[string, LabelSelector | undefined | null, boolean]>([
    ['an unset selector', undefined, true],
    ['a null selector', null, true],
    ['an empty selector', {}, true],
    ['matchLabels, equal', { matchLabels: { app: 'web' } }, true],
    ['matchLabels, other value', { matchLabels: { app: 'db' } }, false],
    ['matchLabels, unset label', { matchLabels: { team: 'a' } }, false],
    ['matchLabels, empty value set to empty', { matchLabels: { empty: '' } }, true],
    ['In, value listed', { matchExpressions: [{ key: 'app', operator: 'In', values: ['db', 'web'] }] }, true],
    ['In, value not listed', { matchExpressions: [{ key: 'app', operator: 'In', values: ['db'] }] }, false],
    ['In, label unset', { matchExpressions: [{ key: 'team', operator: 'In', values: ['a'] }] }, false],
    ['NotIn, value listed', { matchExpressions: [{ key: 'app', operator: 'NotIn', values: ['web'] }] }, false],
    ['NotIn, value not listed', { matchExpressions: [{ key: 'app', operator: 'NotIn', values: ['db'] }] }, true],
    [
      'NotIn, label unset (holds, as Kubernetes defines it)',
      { matchExpressions: [{ key: 'team', operator: 'NotIn', values: ['a'] }] },
      true,
    ],
    ['Exists, set', { matchExpressions: [{ key: 'tier', operator: 'Exists' }] }, true],
    ['Exists, set to the empty string', { matchExpressions: [{ key: 'empty', operator: 'Exists' }] }, true],
    ['Exists, unset', { matchExpressions: [{ key: 'team', operator: 'Exists' }] }, false],
    ['DoesNotExist, unset', { matchExpressions: [{ key: 'team', operator: 'DoesNotExist' }] }, true],
    ['DoesNotExist, set', { matchExpressions: [{ key: 'app', operator: 'DoesNotExist' }] }, false],
    [
      'all terms hold',
      { matchLabels: { app: 'web' }, matchExpressions: [{ key: 'tier', operator: 'In', values: ['front'] }] },
      true,
    ],
    [
      'one term of several fails',
      { matchLabels: { app: 'web' }, matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['front'] }] },
      false,
    ],
    ['In without values (invalid)', { matchExpressions: [{ key: 'app', operator: 'In', values: [] }] }, false],
    [
      'Exists with values (invalid)',
      { matchExpressions: [{ key: 'app', operator: 'Exists', values: ['web'] }] },
      false,
    ],
    ['an unknown operator', { matchExpressions: [{ key: 'app', operator: 'Equals', values: ['web'] }] }, false],
  ])('%s', (_name, selector, matches) => {
    const verdict = evaluateSelector(selector, labels);
    expect(verdict.matches).toBe(matches);
    expect(verdict.failed.length === 0).toBe(matches);
  });

  it('does not take a label from the prototype chain', () => {
    expect(evaluateSelector({ matchExpressions: [{ key: 'constructor', operator: 'Exists' }] }, {}).matches).toBe(
      false,
    );
    expect(evaluateSelector({ matchExpressions: [{ key: 'toString', operator: 'DoesNotExist' }] }, {}).matches).toBe(
      true,
    );
  });

  it('names every failing term, as written, with why it fails', () => {
    const selector: LabelSelector = {
      matchLabels: { app: 'db', tier: 'front', 'agents.kruise.io/created-by': 'sandbox' },
      matchExpressions: [
        { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['sandbox-system', 'kube-system'] },
        { key: 'tier', operator: 'In', values: ['back', 'data'] },
        { key: 'team', operator: 'Exists' },
        { key: 'app', operator: 'DoesNotExist' },
        { key: 'app', operator: 'In', values: [] },
      ],
    };
    expect(
      evaluateSelector(selector, { app: 'web', tier: 'front', 'kubernetes.io/metadata.name': 'kube-system' }).failed,
    ).toEqual([
      { term: 'matchLabels app=db', reason: 'label app is "web", not "db"' },
      {
        term: 'matchLabels agents.kruise.io/created-by=sandbox',
        reason: 'label agents.kruise.io/created-by is not set',
      },
      {
        term: 'matchExpressions[0] kubernetes.io/metadata.name NotIn (sandbox-system, kube-system)',
        reason: 'label kubernetes.io/metadata.name is "kube-system", one of the excluded values',
      },
      { term: 'matchExpressions[1] tier In (back, data)', reason: 'label tier is "front", none of the listed values' },
      { term: 'matchExpressions[2] team Exists', reason: 'label team is not set' },
      { term: 'matchExpressions[3] app DoesNotExist', reason: 'label app is set (to "web")' },
      {
        term: 'matchExpressions[4] app In',
        reason: 'invalid: In needs at least one value (kube-apiserver refuses this selector)',
      },
    ]);
  });
});
