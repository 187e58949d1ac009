/**
 * `npm run static-documents [-- --remote --env production]`
 *
 * PUBLIC_DOCUMENTS=r2 (src/store/static-documents.ts): writes the static copy of every providers.v1 and mirror
 * document the registry holds onto the R2 bucket, for the bucket's public custom domain. Every publish, lifecycle
 * change, mirror sync and pull-through writes its own copies once the setting is on; this is for what was
 * published before it was turned on (run once after `npm run deploy -- --public-documents URL` and attaching the
 * domain), and a repair. Then checks the domain and, when it passes, writes the marker that lets the Worker send
 * clients there (src/store/files-origin-ready.ts): until then the Worker serves everything itself.
 */
import { parseArgs } from 'node:util';
import { checkStateTarget, run, say, STATE_OPTIONS } from './lib/cli';
import { readRegistryConfig } from './lib/config';
import { openStore } from './lib/stores/open';
import { InputError } from '../src/protocol/errors';
import { writeAllStaticCopies } from '../src/store/static-documents';
import { FILES_ORIGIN_RECHECK_MS, markFilesOriginReady } from '../src/store/files-origin-ready';
import type { BlobStore } from '../src/store/store';

const USAGE = `usage: npm run static-documents -- [options]

  Writes the static copies of every provider version list, download document and mirror document
  (PUBLIC_DOCUMENTS = "r2" and FILES_ORIGIN of wrangler.toml's environment; docs/serving.md).

  --remote, --env NAME     the KV namespace and R2 bucket of wrangler.toml (credentials as publish-provider --remote)
  --config PATH            wrangler.toml (default ./wrangler.toml)
  --persist-to DIR         local state root (default .wrangler/state)

Then checks that the domain serves the bucket and refuses its private objects (names starting with ".":
the WAF rule); once it passes, the Worker points discovery's providers.v1 and release files at the domain.
Until then it serves them itself, so run this after attaching the domain.

Exit status: 0 written and checked, 1 when the environment does not set PUBLIC_DOCUMENTS = "r2", or the domain
cannot be reached, does not serve the bucket or serves private objects (the copies are written anyway), 2 for usage.`;

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
    say(await checkFilesOrigin(store.blobs, documents.filesOrigin));
    await markFilesOriginReady(store.kv, documents.filesOrigin);
    say(
      `checked: the Worker now points providers.v1 (discovery) and release files at ${documents.filesOrigin} ` +
        `(each of its isolates within ${FILES_ORIGIN_RECHECK_MS / 1000} seconds, and KV's minute)`,
    );
  } finally {
    await store.close();
  }
}, USAGE);

/** Until this check passes, the Worker serves everything itself (src/store/files-origin-ready.ts): said with every refusal. */
const UNTIL_CHECKED = 'until this check passes the Worker keeps serving provider metadata and files itself';

/**
 * The check `npm run static-documents` runs after writing the copies, before the Worker may send clients to
 * FILES_ORIGIN: the domain serves this bucket (a public probe object written with a fresh nonce comes back) and
 * refuses the objects whose name starts with "." (the WAF rule of docs/serving.md: a harmless marker under such a
 * name must not come back). Returns the line to print when both hold. Throws InputError naming the fix when the
 * domain cannot be reached, does not serve the probe (not attached to this bucket yet), or serves the private marker.
 */
async function checkFilesOrigin(blobs: BlobStore, filesOrigin: string): Promise<string> {
  const nonce = crypto.randomUUID();
  await blobs.put(PROBE_KEY, nonce, { httpMetadata: { contentType: 'text/plain', cacheControl: 'no-store' } });
  await blobs.put(CHECK_KEY, 'if you can read this on the files domain, add its WAF rule (docs/serving.md)\n');
  const domain = new URL(filesOrigin).hostname;
  const attach = `attach the domain to the bucket (npx wrangler r2 bucket domain add BUCKET --domain ${domain} --zone-id ZONE_ID) and run this again`;
  let probe: Response;
  let secret: Response;
  try {
    probe = await fetch(`${filesOrigin}/${PROBE_KEY}`, { signal: AbortSignal.timeout(10_000), redirect: 'manual' });
    const served = probe.status === 200 ? await probe.text() : null;
    if (served !== nonce) {
      throw new InputError(
        `${filesOrigin}/${PROBE_KEY} answered HTTP ${probe.status}${served === null ? '' : ' with other bytes'}: the domain does not serve this bucket yet; ${attach} (${UNTIL_CHECKED})`,
      );
    }
    secret = await fetch(`${filesOrigin}/${CHECK_KEY}`, { signal: AbortSignal.timeout(10_000), redirect: 'manual' });
  } catch (error) {
    if (error instanceof InputError) throw error;
    throw new InputError(`could not reach ${filesOrigin} (${(error as Error).message}): ${attach} (${UNTIL_CHECKED})`);
  }
  if (secret.status === 200) {
    throw new InputError(
      `${filesOrigin}/${CHECK_KEY} answered 200: the domain serves the bucket's private objects (records, uploads, audit, sealed keys). ` +
        `Add the WAF custom rule (http.host eq "${domain}" and http.request.uri.path contains "/.") → Block now (docs/serving.md), then run this again (${UNTIL_CHECKED})`,
    );
  }
  return `${filesOrigin} serves the bucket (${PROBE_KEY}) and refuses private objects (HTTP ${secret.status} for ${CHECK_KEY})`;
}

/** A public probe object: the check asks the files origin for it (a name no document or release file can have). */
const PROBE_KEY = 'v1/files-origin-check';
/** The object the check asks the files origin for: its name starts with ".", like every object that must stay private. */
const CHECK_KEY = '.files-origin-check';
