import { describe, expect, it } from 'vitest';
import { burstCpuLine, perClaimLine, type BurstCpuResult } from '../../bench/deliver/burst-cpu.js';

const burst: BurstCpuResult = {
  wallSeconds: 1.6,
  cores: 2,
  machine: { busy: 3.1, idle: 0.1, stolen: 0 },
  parts: { 'deliver-env': 0.5, 'kube-apiserver': 0.7, 'the wrappers and their apps': 1.1 },
};

describe('the burst CPU lines', () => {
  it('divide the busy time and each part by the claims, and the control path alone by the cores', () => {
    expect(perClaimLine(burst, 200)).toBe(
      '  per claim: 15.5 ms of CPU busy (deliver-env 2.5, kube-apiserver 3.5, the wrappers and their apps 5.5); ' +
        'deliver-env, kube-apiserver, etcd alone: 6.0 ms a claim, 0.60 s of 2 cores for the 200\n',
    );
    expect(perClaimLine(burst, 100)).toContain('per claim: 31.0 ms of CPU busy (deliver-env 5.0,');
  });

  it('leave to the rest what no part ran, and say why the wrappers are missing when they are', () => {
    expect(burstCpuLine(burst)).toContain('machine busy 97% (3.10 CPU-s busy, 0.10 idle, 0.00 stolen)');
    expect(burstCpuLine(burst)).toContain('the rest (the kernel, anything else) 0.80 CPU-s');
    const unmeasured = burstCpuLine({ ...burst, wrappersUnmeasured: 'not root' });
    expect(unmeasured).toContain('the rest (the wrappers and apps, unmeasured: not root; the kernel)');
  });
});
