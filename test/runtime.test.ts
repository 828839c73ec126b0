import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

// The project brings its own Node (the `node` dev dependency, first on PATH in every npm script), so the
// suite must never run on the machine's older one: the product is built, tested and shipped on Node 26.
const wanted = 26;

describe('the runtime under test', () => {
  it(`is Node ${wanted} or newer, the line the image ships`, () => {
    const major = Number(process.versions.node.split('.')[0]);
    expect(major, `running on ${process.version} (${process.execPath})`).toBeGreaterThanOrEqual(wanted);
  });

  it('is the version package.json pins, and engines admits it', () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      engines: { node: string };
      devDependencies: Record<string, string>;
    };
    expect(pkg.devDependencies.node).toBe(process.versions.node);
    expect(pkg.engines.node).toBe(`>=${wanted}.0`);
  });

  it('is the Node the Dockerfile builds and runs on', () => {
    const dockerfile = readFileSync(new URL('../Dockerfile', import.meta.url), 'utf8');
    const bases = [...dockerfile.matchAll(/^FROM (\S+)/gm)].map((m) => m[1]);
    expect(bases).toEqual([
      `node:${wanted}-trixie-slim`,
      `node:${wanted}-trixie-slim`,
      `gcr.io/distroless/nodejs${wanted}-debian13:nonroot`,
    ]);
  });
});
