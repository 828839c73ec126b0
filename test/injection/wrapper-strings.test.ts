// The wrapper's strings are copied into every wrapped command of every patch. V8 14's JSON.stringify fast path
// takes only plain strings: a string joined at run time (a template literal of other constants, say) stays a
// rope, and one rope among the operations sends the whole patch's stringify down the slow path, which made the
// injecting review measurably slower (the commit that made it a literal has the figures). A string literal is
// internalized when its module loads; a joined string is not, so that is what this holds the constants to.
import v8 from 'node:v8';
import { describe, expect, it } from 'vitest';
import { WRAPPER } from '../../src/injection/env-wrapper.js';
import { ENV_DIR, WRAPPER_PATH } from '../../src/wrapper/env-dir.js';

v8.setFlagsFromString('--allow-natives-syntax');
// Compiled after the flag is set, so V8 reads the intrinsic in it; only source compiled at run time can.
// eslint-disable-next-line @typescript-eslint/no-implied-eval
const isInternalized = new Function('s', 'return %IsInternalizedString(s)') as (s: string) => boolean;

describe("the wrapper's strings in a patch", () => {
  it('tells a joined string from a literal (the check itself)', () => {
    const joined = `${ENV_DIR}/${'run_with_envs.sh'}`;
    expect(isInternalized(joined)).toBe(false);
    expect(isInternalized('/var/sandbox/run_with_envs.sh')).toBe(true);
  });

  it('are literals, not strings joined when the module loads', () => {
    for (const part of [...WRAPPER, WRAPPER_PATH, ENV_DIR])
      expect({ part, literal: isInternalized(part) }).toEqual({ part, literal: true });
  });
});
