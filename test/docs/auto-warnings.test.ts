// docs/policy.md quotes every line Auto says about a pod, exactly, with the names as placeholders: made here by
// the same functions the injection calls (src/injection/auto-warnings.ts), so a reworded warning fails here.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as warnings from '../../src/injection/auto-warnings.js';
import type { ProbeWay } from '../../src/injection/auto-warnings.js';
import { DOCS_DIR } from './markdown-table.js';

const HANDLER = 'HANDLER' as ProbeWay;
const PROBE = 'PROBE' as 'livenessProbe';

const LINES = [
  warnings.readinessProbeWarning('CONTAINER', HANDLER),
  warnings.restartingProbeWarning('CONTAINER', PROBE, HANDLER),
  warnings.noCommandWarning('CONTAINER'),
  warnings.noAgentRuntimeWarning(),
  warnings.mainMountBlocksWarning('CONTAINER', 'VOLUME'),
  warnings.containerMountBlocksWarning('CONTAINER', 'VOLUME'),
  warnings.sidecarMountKeptWarning('SIDECAR'),
];

describe("docs/policy.md's quotes of Auto's warnings", () => {
  const policy = readFileSync(`${DOCS_DIR}policy.md`, 'utf8');

  it.each(LINES)('quotes `%s`', (line) => {
    expect(policy).toContain(`\`${line}\``);
  });
});
