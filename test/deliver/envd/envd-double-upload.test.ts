/**
 * The envd double's upload, held to what envd's own does (packages/envd/internal/api/upload.go): parts named
 * `file` written in order, to `path` or, without it, to each part's file name; a second part for one path is
 * refused after the first was written; other parts skipped; a path outside the volume refused and recorded.
 * Delivery depends on each of these, so a double that drifted from them would let a wrong client pass.
 */
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { multipartForm, type FormFile } from '../../../src/deliver/envd/http-call.js';
import { makeTempDir, removeDir } from '../../wrapper/run-wrapper.js';
import { startEnvdDouble, type EnvdDouble } from '../../support/envd-double.js';

let dir: string;
let envd: EnvdDouble;

beforeEach(async () => {
  dir = await makeTempDir('envd-double-upload');
  envd = await startEnvdDouble({ root: dir, token: 't', halfWriteMs: 0 });
});

afterEach(async () => {
  await envd.close();
  await removeDir(dir);
});

async function upload(query: Record<string, string>, files: readonly FormFile[]): Promise<[number, unknown]> {
  const form = multipartForm(files);
  const answer = await fetch(`${envd.url}/files?${new URLSearchParams({ username: 'root', ...query }).toString()}`, {
    method: 'POST',
    headers: { 'content-type': form.type, 'x-access-token': 't' },
    body: form.body,
  });
  return [answer.status, await answer.json()];
}

const file = (filename: string, content: string, name = 'file'): FormFile => ({ name, filename, content });

describe('the envd double: POST /files', () => {
  it('without path, writes each file part to the path its file name gives, in order, and lists them all', async () => {
    const [status, body] = await upload({}, [
      file('/var/sandbox/a.txt', 'one'),
      file('ignored.txt', 'not a file part', 'note'),
      file('/var/sandbox/sub/b.txt', 'two'),
    ]);
    expect(status).toBe(200);
    expect(body).toEqual([
      { path: '/var/sandbox/a.txt', name: 'a.txt', type: 'file' },
      { path: '/var/sandbox/sub/b.txt', name: 'b.txt', type: 'file' },
    ]);
    expect(readFileSync(path.join(dir, 'a.txt'), 'utf8')).toBe('one');
    expect(readFileSync(path.join(dir, 'sub/b.txt'), 'utf8')).toBe('two');
    expect(envd.requests.at(-1)).toMatchObject({
      operation: 'upload',
      path: '/var/sandbox/a.txt /var/sandbox/sub/b.txt',
      paths: ['/var/sandbox/a.txt', '/var/sandbox/sub/b.txt'],
      status: 200,
    });
  });

  it('with path, writes the first file part there and refuses a second one, as envd, after the first', async () => {
    expect((await upload({ path: '/var/sandbox/x' }, [file('a', 'first')]))[0]).toBe(200);
    const [status] = await upload({ path: '/var/sandbox/y' }, [file('a', 'one'), file('b', 'two')]);
    expect(status).toBe(400);
    expect(readFileSync(path.join(dir, 'y'), 'utf8')).toBe('one');
  });

  it('refuses a second part for a path already written in the same request', async () => {
    const [status] = await upload({}, [file('/var/sandbox/a', 'one'), file('/var/sandbox/a', 'two')]);
    expect(status).toBe(400);
    expect(readFileSync(path.join(dir, 'a'), 'utf8')).toBe('one');
  });

  it('writes nothing and answers [] for a body with no file part', async () => {
    expect(await upload({}, [file('/var/sandbox/a', 'x', 'other')])).toEqual([200, []]);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('refuses a file outside the volume and records it, whether named by path or by file name', async () => {
    expect((await upload({}, [file('/etc/passwd', 'x')]))[0]).toBe(400);
    expect((await upload({}, [file('relative.txt', 'x')]))[0]).toBe(400);
    expect((await upload({ path: '/root/.bashrc' }, [file('a', 'x')]))[0]).toBe(400);
    expect(envd.outside).toEqual(['/etc/passwd', 'relative.txt', '/root/.bashrc']);
  });

  it('answers 500 for a multipart body it cannot read, and 400 for one that is not multipart', async () => {
    const broken = await fetch(`${envd.url}/files?username=root`, {
      method: 'POST',
      headers: { 'content-type': 'multipart/form-data; boundary=b', 'x-access-token': 't' },
      body: '--b\r\nno end',
    });
    expect(broken.status).toBe(500);
    const plain = await fetch(`${envd.url}/files?username=root`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', 'x-access-token': 't' },
      body: 'x',
    });
    expect(plain.status).toBe(400);
  });
});
