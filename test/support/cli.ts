/** The built CLI (`node dist/cli/main.js`) as a child process: its exit status and both streams. */
import { execFile } from 'node:child_process';

export const CLI = new URL('../../dist/cli/main.js', import.meta.url).pathname;

export interface CliRun {
  /** The exit status; -1 when the process ended by a signal. */
  code: number;
  stdout: string;
  stderr: string;
}

/** `uid`: run as that uid and gid (no supplementary groups), as a container's non-root user. */
export function runCli(args: string[], stdin = '', options: { uid?: number } = {}): Promise<CliRun> {
  const ids = options.uid === undefined ? {} : { uid: options.uid, gid: options.uid };
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [CLI, ...args], ids, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
    child.stdin?.end(stdin);
  });
}
