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
import type { BlobStore } from '../src/store/store';

const USAGE = `usage: npm run static-documents -- [options]

  Writes the static copies of every provider version list, download document and mirror document
  (PUBLIC_DOCUMENTS = "r2" and FILES_ORIGIN of wrangler.toml's environment; docs/serving.md).

  --remote, --env NAME     the KV namespace and R2 bucket of wrangler.toml (credentials as publish-provider --remote)
  --config PATH            wrangler.toml (default ./wrangler.toml)
  --persist-to DIR         local state root (default .wrangler/state)

Then checks that the domain refuses the bucket's private objects (names starting with ".": the WAF rule).

Exit status: 0 written, 1 when the environment does not set PUBLIC_DOCUMENTS = "r2" or the domain serves
private objects, 2 for usage.`;

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
    say(await checkPrivateObjectsBlocked(store.blobs, documents.filesOrigin));
  } finally {
    await store.close();
  }
}, USAGE);

/** The object the check below asks the files origin for: its name starts with ".", like every object that must stay private. */
const CHECK_KEY = '.files-origin-check';

/**
 * Checks that FILES_ORIGIN refuses objects whose name starts with "." (the WAF rule of docs/serving.md): writes a
 * harmless marker object under such a name and asks the domain for it. Throws InputError when the domain serves it
 * (the bucket's private objects are public: add the rule); returns the line to print otherwise, also when the domain
 * cannot be reached (not attached yet, or a local run).
 */
async function checkPrivateObjectsBlocked(blobs: BlobStore, filesOrigin: string): Promise<string> {
  await blobs.put(CHECK_KEY, 'if you can read this on the files domain, add its WAF rule (docs/serving.md)\n');
  let status: number;
  try {
    status = (await fetch(`${filesOrigin}/${CHECK_KEY}`, { signal: AbortSignal.timeout(10_000), redirect: 'manual' })).status;
  } catch (error) {
    return `could not check ${filesOrigin} (${(error as Error).message}): once the domain is attached, run this again to check that it refuses private objects`;
  }
  if (status === 200) {
    throw new InputError(
      `${filesOrigin}/${CHECK_KEY} answered 200: the domain serves the bucket's private objects (records, uploads, audit, sealed keys). ` +
        `Add the WAF custom rule (http.host eq "${new URL(filesOrigin).hostname}" and http.request.uri.path contains "/.") → Block now (docs/serving.md), then run this again`,
    );
  }
  return `${filesOrigin} refuses private objects (HTTP ${status} for ${CHECK_KEY})`;
}
