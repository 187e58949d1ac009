import { defineConfig } from 'vitest/config';
import { cloudflareTest } from '@cloudflare/vitest-pool-workers';
import { quietExpectedWorkerdLines } from './test/fixtures/quiet-workerd';
import { runTmpdir } from './test/fixtures/leaks.setup';

// workerd's "WebSocket peer disconnected" after every Worker test file is expected: keep it out of the log.
quietExpectedWorkerdLines();

// The Worker's tests run inside workerd against Miniflare's KV and R2
// (configured from wrangler.toml), once as configured and once in private
// mode; the scripts' tests run in Node.
// Generates the OpenPGP key the release fixtures sign with, once per project and run (inject('fixtureSigningKey')).
const SIGNING_KEY_SETUP = './test/fixtures/signing-key.setup.ts';
// The scripts' and end-to-end tests get their own TMPDIR; what is left in it, or running from it, fails the run.
const LEAKS_SETUP = './test/fixtures/leaks.setup.ts';
// Local GitHub- and GitLab-shaped OIDC issuers on loopback for the CI-token tests inside workerd (inject('ciIssuers')).
const CI_ISSUERS_SETUP = './test/fixtures/ci-issuers.setup.ts';

// Download counts are sent at once (as an isolate that sees one download per window does), so a test that waits
// for a request's after-response work (waitOnExecutionContext) does not wait out a 500 ms batch window per archive
// GET; test/worker/downloads/ sets the production window where batching is what it tests.
const NO_BATCH_WINDOW = '0';

export default defineConfig({
  test: {
    // Vitest's default on a 2-core machine is one test file at a time; these files mostly wait on
    // subprocesses (wrangler dev, tsx, gpg, terraform) and workerd, so three at a time roughly halves npm test.
    maxWorkers: 3,
    projects: [
      {
        // SIGNING_KEY_SECRET: registry-held signing keys (a test value, as .dev.vars holds one locally).
        plugins: [
          cloudflareTest({
            wrangler: { configPath: './wrangler.toml' },
            miniflare: { bindings: { SIGNING_KEY_SECRET: 'test-held-key-secret-0123456789abcdefghij', DOWNLOAD_BATCH_MS: NO_BATCH_WINDOW } },
          }),
        ],
        test: { name: 'worker', include: ['test/worker/**/*.test.ts', 'test/protocol/**/*.test.ts'], globalSetup: [SIGNING_KEY_SETUP, CI_ISSUERS_SETUP] },
      },
      {
        // The same Worker in private mode (tokens, signed URLs), as `wrangler dev --var ACCESS:private` with a .dev.vars secret.
        // SIGNING_KEY_SECRET '' (not set), whatever a local .dev.vars holds (`npm start` writes one): this project's
        // misconfiguration tests need it missing (test/worker-private/held-key-secret.test.ts).
        plugins: [
          cloudflareTest({
            wrangler: { configPath: './wrangler.toml' },
            miniflare: {
              bindings: {
                ACCESS: 'private',
                URL_SIGNING_SECRET: 'test-signing-secret-not-used-anywhere-else',
                SIGNING_KEY_SECRET: '',
                DOWNLOAD_BATCH_MS: NO_BATCH_WINDOW,
              },
            },
          }),
        ],
        test: { name: 'worker-private', include: ['test/worker-private/**/*.test.ts'], globalSetup: [SIGNING_KEY_SETUP] },
      },
      {
        test: {
          name: 'node',
          include: ['test/scripts/**/*.test.ts', 'test/e2e/**/*.test.ts', 'test/identity/**/*.test.ts'],
          environment: 'node',
          // The run's own temp directory for these tests and every process they start (LEAKS_SETUP checks it).
          env: { TMPDIR: runTmpdir() },
          // LEAKS_SETUP fails the run when a test leaves a process or temp folder behind.
          globalSetup: [SIGNING_KEY_SETUP, LEAKS_SETUP],
          testTimeout: 240_000, // a slow machine makes the CLI-driven tests slow; a hang still fails
          hookTimeout: 300_000, // the e2e setup publishes with the real CLI: minutes when the 2-core machine is busy
          // Files are independent: each has its own temp state and free ports.
          fileParallelism: true,
        },
      },
    ],
  },
});
