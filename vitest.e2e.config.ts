import { defineConfig } from 'vitest/config';

// End-to-end suite: each file starts a real etcd + kube-apiserver (see
// docs/e2e.md), so files run one after another and timeouts are generous.
// Run it with `npm run test:e2e`, which builds the binaries first.
export default defineConfig({
  test: {
    include: ['test/e2e/**/*.e2e.test.ts'],
    fileParallelism: false,
    testTimeout: 180_000,
    hookTimeout: 600_000,
    teardownTimeout: 60_000,
  },
});
