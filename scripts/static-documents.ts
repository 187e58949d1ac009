/**
 * `npm run static-documents [-- --remote --env production]`
 *
 * PUBLIC_DOCUMENTS=r2 (src/store/static-documents.ts): writes the static copy of every providers.v1 and mirror
 * document the registry holds onto the R2 bucket, for the bucket's public custom domain. Every publish, lifecycle
 * change, mirror sync and pull-through writes its own copies once the setting is on; this is for what was
 * published before it was turned on (run once after `npm run deploy -- --public-documents URL`), and a repair.
 */
import { parseArgs } from 'node:util';
import { checkStateTarget, run, say, STATE_OPTIONS } from './lib/cli';
import { readRegistryConfig } from './lib/config';
import { openStore } from './lib/stores/open';
import { InputError } from '../src/protocol/errors';
import { writeAllStaticCopies } from '../src/store/static-documents';

const USAGE = `usage: npm run static-documents -- [options]

  Writes the static copies of every provider version list, download document and mirror document
  (PUBLIC_DOCUMENTS = "r2" and FILES_ORIGIN of wrangler.toml's environment; docs/serving.md).

  --remote, --env NAME     the KV namespace and R2 bucket of wrangler.toml (credentials as publish-provider --remote)
  --config PATH            wrangler.toml (default ./wrangler.toml)
  --persist-to DIR         local state root (default .wrangler/state)

Exit status: 0 written, 1 when the environment does not set PUBLIC_DOCUMENTS = "r2", 2 for usage.`;

run(async () => {
  const { values } = parseArgs({ options: { ...STATE_OPTIONS } });
  if (values.help) {
    say(USAGE);
    return;
  }
  checkStateTarget(values);
  const config = await readRegistryConfig({ configPath: values.config, env: values.env, persistTo: values['persist-to'] });
  const documents = config.publicDocuments ?? null;
  if (!documents) {
    throw new InputError(
      `${config.configPath}${values.env ? ` (env ${values.env})` : ''} does not set PUBLIC_DOCUMENTS = "r2": nothing to write (npm run deploy -- --public-documents https://files.example.com sets it)`,
    );
  }
  const store = await openStore(config, { remote: values.remote });
  try {
    const written = await writeAllStaticCopies(store, documents);
    say(`${written} static documents written to ${store.description}, served on ${documents.filesOrigin}`);
  } finally {
    await store.close();
  }
}, USAGE);
