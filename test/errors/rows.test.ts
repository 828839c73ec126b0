/** Each row of the catalogue makes its own error, and no code of the catalogue is written anywhere else. */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { REFUSALS } from '../../src/deliver/controller/outcome.js';
import { EnvdError, type EnvdErrorKind } from '../../src/deliver/envd/envd-files.js';
import { CATALOGUE, CatalogueError, STARTUP_ERRORS } from '../../src/errors/index.js';
import { commandOptions, UsageError } from '../../src/cli/command.js';

describe("a row's error", () => {
  const row = STARTUP_ERRORS.tlsKeyMismatch;
  const error = new row.Error('tls.key', 'tls.crt');

  it('carries the code, status and message the row gives as a value', () => {
    expect({ code: error.code, status: error.status, message: error.message }).toEqual(row('tls.key', 'tls.crt'));
    expect(error).toBeInstanceOf(Error);
    expect(error).toBeInstanceOf(CatalogueError);
    expect(error.name).toBe(row.code);
  });

  it('is an instance of its own row only', () => {
    expect(error).toBeInstanceOf(row.Error);
    expect(error).not.toBeInstanceOf(STARTUP_ERRORS.tlsKeyInvalid.Error);
    expect(new STARTUP_ERRORS.tlsKeyInvalid.Error('key', 'bad')).not.toBeInstanceOf(row.Error);
  });

  it('words a refused command line as the options row does, whichever command refused it', () => {
    const problems = ['--port (SANDBOX_INJECTOR_PORT): must be integer'];
    const read = () => commandOptions({ kind: 'refused', problems }, () => '');
    expect(read).toThrow(UsageError);
    expect(read).toThrow(STARTUP_ERRORS.optionsInvalid(problems).message);
  });
});

describe("deliver-env's failures", () => {
  it('give every kind of envd failure and every refusal a delivery code of the catalogue, each its own', () => {
    const kinds: EnvdErrorKind[] = ['unauthorized', 'rejected', 'unavailable', 'aborted'];
    const codes = [
      ...kinds.map((kind) => new EnvdError(kind, 'what', 'problem').code),
      ...Object.values(REFUSALS).map((row) => row.code),
    ];
    const deliveryCodes = CATALOGUE.filter((entry) => entry.kind === 'delivery').map((entry) => entry.code);
    expect([...codes].sort()).toEqual([...deliveryCodes].sort());
  });

  it("word an envd failure as the row's template does", () => {
    const error = new EnvdError('unavailable', 'GET /var/sandbox/.env_ready', 'ECONNREFUSED');
    expect(error).toBeInstanceOf(CatalogueError);
    expect(error.message).toBe('GET /var/sandbox/.env_ready: ECONNREFUSED');
  });
});

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

/** Every TypeScript module of src/ outside src/errors/, by its path below src/. */
function modulesOutsideErrors(): { path: string; text: string }[] {
  return readdirSync(SRC, { recursive: true, encoding: 'utf8' })
    .filter((path) => path.endsWith('.ts') && !path.startsWith('errors/'))
    .map((path) => ({ path, text: readFileSync(`${SRC}${path}`, 'utf8') }));
}

/** The classes of a module (prettier ends each top-level one with a `}` of its own line), with their bodies. */
function classes(text: string): { name: string; body: string }[] {
  return [...text.matchAll(/^(?:export )?(?:abstract )?class (\w+)[^{]*\{([\s\S]*?)^\}/gm)].map((match) => ({
    name: match[1] ?? '',
    body: match[2] ?? '',
  }));
}

describe('the codes of the catalogue', () => {
  const modules = modulesOutsideErrors();

  it('are written only in src/errors/', () => {
    expect(modules.length).toBeGreaterThan(50);
    const written = modules.filter(({ text }) => /['"`]SI_[A-Z_]+/.test(text)).map(({ path }) => path);
    expect(written).toEqual([]);
  });

  it("are never held by a class of its own: a row's Error carries them", () => {
    const field = /^\s*(?:(?:public|readonly|override|declare)\s+)*code\s*[:=]|\bthis\.code\s*=/m;
    const copying = modules.flatMap(({ path, text }) =>
      classes(text)
        .filter(({ body }) => field.test(body))
        .map(({ name }) => `${path}: ${name}`),
    );
    expect(copying).toEqual([]);
  });

  it('are looked for in every class (the scan finds the error classes of src/)', () => {
    const names = modules.flatMap(({ text }) => classes(text).map(({ name }) => name));
    expect(names).toEqual(expect.arrayContaining(['BusyError', 'EnvdError', 'PolicyError']));
  });
});
