/** The harnesses' knobs: numbers from the environment, checked before a run starts rather than halfway through. */

export type KnobKind = 'positive number' | 'positive integer' | 'non-negative number';

const FITS: Record<KnobKind, (value: number) => boolean> = {
  'positive number': (value) => Number.isFinite(value) && value > 0,
  'positive integer': (value) => Number.isInteger(value) && value > 0,
  'non-negative number': (value) => Number.isFinite(value) && value >= 0,
};

/** The variable `name` as a number of its kind, or `fallback` when it is unset or empty; anything else throws. */
export function knob(name: string, fallback: number, kind: KnobKind = 'positive number'): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!FITS[kind](value)) throw new Error(`${name}: "${raw}" is not a ${kind}`);
  return value;
}
