/** The built CLI (`node dist/cli/main.js`) as a child process: its exit status and both streams. */
import { execFile } from 'node:child_process';

export const CLI = new URL('../../dist/cli/main.js', import.meta.url).pathname;

export interface CliRun {
  /** The exit status; -1 when the process ended by a signal. */
  code: number;
  stdout: string;
  stderr: string;
}

export function runCli(args: string[], stdin = ''): Promise<CliRun> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [CLI, ...args], (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
    child.stdin?.end(stdin);
  });
}
