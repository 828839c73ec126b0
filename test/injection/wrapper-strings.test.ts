// The wrapper's strings are copied into every wrapped command of every patch, so each must be one JSON.stringify's
// fast path takes: a flat string (flatJoin, src/json/fast-json.ts). A string joined at load with a template
// literal of other constants would be a rope, which nothing has flattened yet when this runs.
import v8 from 'node:v8';
import { describe, expect, it } from 'vitest';
import { WRAPPER } from '../../src/injection/env-wrapper.js';
import { ENV_DIR, WRAPPER_PATH } from '../../src/wrapper/env-dir.js';

v8.setFlagsFromString('--allow-natives-syntax');
// Compiled after the flag is set, so V8 reads the intrinsic in it; only source compiled at run time can.
// eslint-disable-next-line @typescript-eslint/no-implied-eval
const isFlat = new Function('s', 'return %StringIsFlat(s)') as (s: string) => boolean;

describe("the wrapper's strings in a patch", () => {
  it('tells a rope from a flat string (the check itself)', () => {
    const joined = `${ENV_DIR}/${'run_with_envs.sh'}`;
    expect(isFlat(joined)).toBe(false);
    expect(isFlat('/var/sandbox/run_with_envs.sh')).toBe(true);
  });

  it('are flat strings, not ropes joined when the module loads', () => {
    for (const part of [...WRAPPER, WRAPPER_PATH, ENV_DIR])
      expect({ part, flat: isFlat(part) }).toEqual({ part, flat: true });
  });
});
