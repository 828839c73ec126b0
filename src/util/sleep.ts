/** Waits `ms` without keeping the process alive: the default delay of the retrying watchers. */
export function unrefSleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
