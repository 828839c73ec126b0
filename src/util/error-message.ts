/** The message of anything thrown: an Error's own, or the value as text (a rejection need not be an Error). */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
