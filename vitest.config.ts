import { defineConfig } from 'vitest/config';
import { cloudflareTest } from '@cloudflare/vitest-pool-workers';

// Two projects: the Worker's tests run inside workerd against Miniflare's KV
// and R2 (configured from wrangler.toml); the scripts' tests run in Node.
export default defineConfig({
  test: {
    projects: [
      {
        plugins: [cloudflareTest({ wrangler: { configPath: './wrangler.toml' } })],
        test: { name: 'worker', include: ['test/worker/**/*.test.ts', 'test/protocol/**/*.test.ts'] },
      },
      {
        test: {
          name: 'node',
          include: ['test/scripts/**/*.test.ts', 'test/e2e/**/*.test.ts'],
          environment: 'node',
          testTimeout: 120_000,
          hookTimeout: 120_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
