/**
 * A string map that counts how often its keys are enumerated: once per walk, copy or diff of it. Tests count the
 * work done on a huge map this way instead of timing it.
 */
export function watchedMap(entries: Record<string, string>): {
  map: Record<string, string>;
  enumerations: () => number;
} {
  let enumerations = 0;
  const map = new Proxy(entries, {
    ownKeys(target) {
      enumerations += 1;
      return Reflect.ownKeys(target);
    },
  });
  return { map, enumerations: () => enumerations };
}
