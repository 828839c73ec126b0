import { readFileSync } from 'node:fs';

/** package.json ships beside dist/ (the image copies it too): src/cli and dist/cli both sit two levels down. */
const PACKAGE_JSON = new URL('../../package.json', import.meta.url);

/** The package's version, as `--version` prints it and the `listening` log line carries it. */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(PACKAGE_JSON, 'utf8')) as { version: string }).version;
}
