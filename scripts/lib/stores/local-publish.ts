import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { parseLeaseState } from '../../../src/store/lease';
import { leaseObjectKey } from '../../../src/store/layout';
import type { BlobStore } from '../../../src/store/store';
import { deleteTokenRecord } from '../../../src/store/tokens/write';
import { InputError } from '../../../src/protocol/errors';
import { processExists } from '../process-exists';
import type { RegistryConfig } from '../config';
import { RegistryClient } from '../registry-api';
import { createToken } from '../tokens';
import type { StoreHandle } from './handle';
import { openLocalStore } from './local';
import { timing } from '../timing';

/**
 * How `publish-provider` and `publish-module` publish without --registry:
 * through the publish API, served by the registry Worker itself on the
 * local state (openLocalStore with `registry`: the bundle `wrangler deploy`
 * ships, minified, wrangler.toml's bindings and vars, as `npm start` serves it). The
 * Worker is the one writer of releases; the CLI holds no write path of its own.
 *
 * The operator's credential goes through the same check as any other publish:
 * a publish token scoped to exactly the one package (`pkg`, NS/TYPE or
 * NS/NAME/SYSTEM), expiring within the hour, is created in the local KV (as
 * `npm run token -- create --publish` does: only its hash is stored, the token
 * itself lives in this process only), sent as the bearer, and deleted when the
 * publish ends, whatever its outcome. A CLI killed meanwhile leaves a record
 * that expires on its own. There is no route or header that skips the check.
 */

/** How long a local publish's token is valid (a killed CLI cannot revoke it). */
const LOCAL_TOKEN_MS = 3600_000;

export interface LocalPublish {
  /** The local state's registry (startLocalRegistry). */
  registry: LocalRegistry;
  /** The one package the token may publish: NS/TYPE or NS/NAME/SYSTEM. */
  pkg: string;
  /** The command, naming the token ("publish-provider (local, pid N on HOST)"), which names the publish in the audit log and the lease. */
  command: string;
  /** The package's lease (providerLeaseName, moduleLeaseName): one a killed local publish left is released first. */
  lease: string;
  env: NodeJS.ProcessEnv;
  log: (line: string) => void;
}

/** The refusal of `--remote` for a release publish (InputError, exit 1): deployed registries are published to through their API. */
export function remotePublishRefusal(command: 'publish-provider' | 'publish-module', pkg: string): InputError {
  return new InputError(
    `${command} --remote is gone: the registry's publish API is the one writer of releases. Publish to a deployed registry with ` +
      `--registry https://YOUR-REGISTRY and a publish token in $EDGE_REGISTRY_TOKEN (npm run token -- create --publish ${pkg} --remote), ` +
      'or keyless from CI (docs/trusted-publishing.md)',
  );
}

/** A local state's store with its registry Worker, starting or started, and how to close it. */
export interface LocalRegistry {
  store: Promise<StoreHandle>;
  /** Closes the store if it was opened here (not a caller's); never throws. */
  close(): Promise<void>;
}

/**
 * The store and registry Worker a local publish uses: `given` (a caller's open store) when it serves the
 * registry for `hostname`, else the local state of `config`, opened on the first `get()` — or at once
 * with `early` when the state exists already, so the runtime starts while the release is read (a
 * publish refused on its input creates no state). `close()` closes what was opened here (nothing
 * else) and never throws; the opening's failure surfaces where `store` is awaited.
 */
export function startLocalRegistry(
  config: RegistryConfig,
  hostname: string,
  given: StoreHandle | undefined,
  early: boolean,
): { get(): LocalRegistry; close(): Promise<void> } {
  if (given?.registry?.hostname === hostname) {
    const registry = { store: Promise.resolve(given), close: async () => {} };
    return { get: () => registry, close: async () => {} };
  }
  let opened: LocalRegistry | undefined;
  const get = (): LocalRegistry => {
    if (opened) return opened;
    const store = openLocalStore(config, { registry: { hostname } });
    store.catch(() => undefined); // awaited by the publish; a publish stopped before that only closes it
    let closed = false;
    opened = {
      store,
      close: async () => {
        if (closed) return;
        closed = true;
        await store.then((s) => s.close()).catch(() => undefined);
      },
    };
    return opened;
  };
  if (early && existsSync(config.localPersistRoot)) get();
  return { get, close: async () => opened?.close() };
}

/**
 * Runs `publish` with the local state's store and a client of its registry
 * Worker carrying a publish token for `o.pkg`; resolves with what `publish`
 * resolves. Throws what opening the local state throws (InputError, an Error
 * for a bundle that does not build), and what `publish` throws. The token is
 * deleted afterwards (a failure to delete it is a warning: it expires within
 * the hour); the registry is closed (when not a caller's).
 */
export async function withLocalPublish<T>(o: LocalPublish, publish: (p: { store: StoreHandle; client: Promise<RegistryClient> }) => Promise<T>): Promise<T> {
  try {
    const store = await o.registry.store;
    timing('local registry ready');
    // The token and the lease check go on while the publish reads and signs; the client waits for both.
    const made = createToken(store.kv, {
      scopes: [o.pkg],
      purpose: 'publish',
      name: `${o.command} (local, pid ${process.pid} on ${hostname()})`,
      expires: new Date(Date.now() + LOCAL_TOKEN_MS).toISOString(),
    });
    const client = Promise.all([made, releaseKilledLocalLease(store.blobs, o.lease, o.log)]).then(([{ token }]) => {
      timing('publish token created');
      return RegistryClient.local(store.registry!, token, o.env, o.log);
    });
    client.catch(() => undefined); // awaited by `publish`, or by nobody when it stops first
    try {
      return await publish({ store, client });
    } finally {
      const record = await made.then((m) => m.record).catch(() => null);
      if (record) {
        await deleteTokenRecord(store.kv, record.sha256).catch((error: unknown) =>
          o.log(`warning: could not delete this run's publish token ${record.id} (it expires within the hour): ${(error as Error).message}`),
        );
      }
    }
  } finally {
    await o.registry.close();
  }
}

/**
 * The Worker holds a package's lease while it commits (renewed, expiring 30 s after its last renewal). The
 * local runtime dies with the CLI, so a local publish killed mid-commit leaves the lease held by nobody
 * until it expires. Its owner names the local token (`… (local, pid N on HOST)` in its purpose): when
 * that process ran on this host and is gone, the lease is marked released here (a conditional write:
 * only that exact lease state), so a re-run goes ahead at once, as a killed CLI's lease always allowed.
 * Any other lease is left to the Worker (which waits for it). Errors propagate.
 */
async function releaseKilledLocalLease(blobs: BlobStore, name: string, log: (line: string) => void): Promise<void> {
  const object = await blobs.get(leaseObjectKey(name));
  if (!object) return;
  const state = parseLeaseState(await object.text());
  if (!state || state.released || state.expiresAt <= Date.now()) return;
  const local = /\(local, pid (\d+) on ([^)]+)\)/.exec(state.owner.purpose ?? '');
  if (!local || local[2] !== hostname() || Number(local[1]) === process.pid || processExists(Number(local[1]))) return;
  const released = { ...state, released: true, expiresAt: 0 };
  const written = await blobs.put(leaseObjectKey(name), JSON.stringify(released), {
    onlyIf: { etagMatches: object.etag },
    httpMetadata: { contentType: 'application/json' },
  });
  if (written) log(`released the lease ${name}: the local publish holding it (pid ${local[1]}) was killed`);
}
