/**
 * The env folder is fixed by the webhook (src/wrapper/env-dir.ts: its mount and wrapper path), and deliver-env
 * must write into that very folder. The chart has one value for it, which the schema pins to the webhook's and
 * the deliver-env Deployment passes on; kustomize's component spells the same flag. Rendered for real, and the
 * refusals tried, in test/e2e/deliver-env-install.e2e.test.ts.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ENV_DIR } from '../../src/wrapper/env-dir.js';

const text = (path: string): string => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

describe('the env folder of the chart and of manifests/', () => {
  it("is the webhook's folder in values.yaml, and the only value the schema takes", () => {
    expect((parse(text('charts/sandbox-injector/values.yaml')) as { envDir: unknown }).envDir).toBe(ENV_DIR);
    const schema = JSON.parse(text('charts/sandbox-injector/values.schema.json')) as {
      properties: { envDir: unknown };
    };
    expect(schema.properties.envDir).toEqual({ const: ENV_DIR });
  });

  it('reaches deliver-env from that value alone', () => {
    const template = text('charts/sandbox-injector/templates/deliver-env.yaml');
    expect(template).toContain('- --env-dir={{ .Values.envDir }}');
    expect(template).not.toContain(ENV_DIR);
  });

  it("is the webhook's folder in the kustomize component", () => {
    expect(text('manifests/components/deliver-env/deployment.yaml')).toContain(`- --env-dir=${ENV_DIR}\n`);
  });
});
