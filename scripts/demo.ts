/**
 * `npm run demo`: publishes the sample provider demo/example (versions
 * 1.0.0, 1.1.0, 1.2.0, 2.0.0-beta.1 for linux_amd64, linux_arm64,
 * darwin_arm64, windows_amd64; tiny fake executables) into the local state
 * `npm start` serves. Safe to run again: published versions are unchanged.
 */
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { run, say } from './lib/cli';
import { readRegistryConfig } from './lib/config';
import { DEMO_NAMESPACE, DEMO_TYPE, publishDemo } from './lib/demo/provider';
import { runningServer } from './lib/dev/server';

const USAGE = `usage: npm run demo [-- --persist-to DIR] [--config PATH] [--keys-dir DIR] [--json]`;

run(async () => {
  const { values } = parseArgs({
    options: {
      'persist-to': { type: 'string' },
      config: { type: 'string' },
      'keys-dir': { type: 'string' },
      json: { type: 'boolean' },
    },
  });
  const results = await publishDemo({ configPath: values.config, persistTo: values['persist-to'], keysDir: values['keys-dir'], log: say });
  if (values.json) {
    process.stdout.write(`${JSON.stringify(results)}\n`);
    return;
  }
  say('');
  for (const result of results)
    say(`${result.status.padEnd(9)} ${result.address} ${result.version} (${result.platforms.length} platforms, key ${result.key_id})`);
  say('');
  const config = await readRegistryConfig({ configPath: values.config, persistTo: values['persist-to'] });
  const running = runningServer(dirname(config.localPersistRoot));
  const origin = running ?? 'http://localhost:8787';
  say(
    running
      ? `Your npm start at ${origin} serves it now (new versions show within a few seconds). Try:`
      : `Serve it with \`npm start\` (${origin}; \`-- --port N\` for another port), then try:`,
  );
  say(`  ${origin}/  and  ${origin}/modules/demo/vpc/aws  (the pages; their snippets work with terraform init as shown)`);
  say(`  curl ${origin}/v1/providers/${DEMO_NAMESPACE}/${DEMO_TYPE}/versions`);
  say(`  curl ${origin}/v1/providers/${DEMO_NAMESPACE}/${DEMO_TYPE}/1.2.0/download/linux/amd64`);
  say(`  curl ${origin}/v1/modules/demo/vpc/aws/versions`);
}, USAGE);
