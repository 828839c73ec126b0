import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { cpuGroup } from '../../bench/cpu-group.js';
import { timesSeconds } from '../../bench/procs.js';

const group = cpuGroup('si-test-cpu-group');

describe('cpuGroup', () => {
  // Making a cgroup needs root; the benches print their figure as not measured without one.
  it.skipIf('unavailable' in group)(
    'counts what a process ran, once it has exited, as the process itself did',
    async () => {
      if ('unavailable' in group) return;
      try {
        // It waits for a line, so it is in the group before it spins; then it prints its own user and system time.
        const child = spawn('bash', ['-c', 'read -r _; for ((i = 0; i < 300000; i++)); do :; done; times'], {
          stdio: ['pipe', 'pipe', 'inherit'],
        });
        let out = '';
        child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
        const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
        const before = group.seconds();
        group.add(child.pid ?? -1);
        child.stdin.end('\n');
        await exited;
        const ran = group.seconds() - before;
        const [user = '', system = ''] = (out.split('\n')[0] ?? '').split(' ');
        const own = timesSeconds(user) + timesSeconds(system);
        expect(own).toBeGreaterThan(0.05);
        // The group misses only the bash start before the move; times counts in clock ticks (10 ms).
        expect(ran).toBeGreaterThan(own * 0.7 - 0.02);
        expect(ran).toBeLessThan(own * 1.3 + 0.02);
      } finally {
        group.remove();
      }
    },
  );
});
