// The chart's README values table is generated from values.yaml (scripts/chart-values-table.ts): this fails
// when someone changes a value or its comment without regenerating, and pins how comments become rows.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { TABLE_END, TABLE_START, valueRows, valuesTable, withTable } from '../../scripts/chart-values-table.js';

const CHART = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'charts', 'sandbox-injector');
const read = (file: string): string => readFileSync(path.join(CHART, file), 'utf8');

describe('charts/sandbox-injector/README.md', () => {
  it('has the values table generated from values.yaml (else: npm run chart:values-table)', () => {
    const readme = read('README.md');
    expect(readme, 'the README is not what `npm run chart:values-table` writes').toBe(withTable(readme, valuesTable(read('values.yaml'))));
  });

  it('documents every value of the chart, each with a sentence', () => {
    const rows = valueRows(read('values.yaml'));
    for (const key of ['nameOverride', 'fullnameOverride', 'image.repository', 'image.tag', 'image.pullPolicy', 'wrapperImage', 'replicas', 'resources',
      'webhook.failurePolicy', 'webhook.timeoutSeconds', 'webhook.objectSelector', 'webhook.namespaceSelector',
      'certificates.mode', 'certificates.certManagerIssuer', 'config.name', 'config.namespace', 'config.create',
      'config.runtimes', 'postStartConflict', 'logLevel', 'extraArgs', 'autoscaling.enabled', 'monitoring.enabled',
      ...['imagePullSecrets', 'priorityClassName', 'nodeSelector', 'tolerations', 'affinity', 'podAnnotations', 'podLabels']
        .flatMap((key) => [key, `deliverEnv.${key}`])]) {
      expect(rows.map((r) => r.key)).toContain(key);
    }
    for (const row of rows) expect(row.description, row.key).toMatch(/^\S.{10,}$/);
  });
});

describe('valueRows', () => {
  it.each([
    {
      name: 'a documented key is one row, whatever its value; a map without documentation is a group',
      yaml: '# -- A map as one value.\nres:\n  cpu: 1\ngroup:\n  # -- First.\n  a: x\n  # -- Second.\n  b: [1]\n',
      rows: [
        { key: 'res', default: { cpu: 1 }, description: 'A map as one value.' },
        { key: 'group.a', default: 'x', description: 'First.' },
        { key: 'group.b', default: [1], description: 'Second.' },
      ],
    },
    {
      name: 'notes before the documentation and after a blank comment line stay out',
      yaml: '# a note for editors\n# -- Shown,\n# over two lines.\n#\n# not shown\nkey: ""\n',
      rows: [{ key: 'key', default: '', description: 'Shown, over two lines.' }],
    },
  ])('$name', ({ yaml, rows }) => {
    expect(valueRows(yaml)).toEqual(rows);
  });

  it('refuses a value without documentation, naming it', () => {
    expect(() => valueRows('group:\n  # -- Documented.\n  a: 1\n  b: 2\n')).toThrow('group.b has no "# -- " comment');
  });
});

describe('valuesTable and withTable', () => {
  it('escapes pipes, and shows long defaults as a pointer to values.yaml', () => {
    const table = valuesTable(`# -- One | two.\nshort: "a|b"\n# -- Long.\nlong: "${'x'.repeat(120)}"\n`);
    expect(table.split('\n')).toEqual([
      '| value | default | meaning |',
      '| --- | --- | --- |',
      '| `short` | `"a\\|b"` | One \\| two. |',
      '| `long` | see values.yaml | Long. |',
    ]);
  });

  it('replaces only what is between the markers, and refuses a README without them', () => {
    const readme = `# Title\n${TABLE_START}\nold\n${TABLE_END}\nafter\n`;
    expect(withTable(readme, 'new')).toBe(`# Title\n${TABLE_START}\nnew\n${TABLE_END}\nafter\n`);
    expect(() => withTable('# no markers\n', 'new')).toThrow('markers');
  });
});
