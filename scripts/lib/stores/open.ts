import type { RegistryConfig } from '../config';
import { openLocalStore } from './local';
import { type StoreHandle } from './handle';
import { openRemoteKv, openRemoteStore } from './remote';
import { withStaticDocuments } from '../../../src/store/static-documents';

/**
 * Opening the registry's state the one way every script does: the local
 * state `npm start` serves, or with `remote` the KV namespace and R2 bucket
 * of wrangler.toml through Cloudflare's APIs (credentials from `env`).
 * Close the handle when done, also after errors.
 */

export interface OpenStoreOptions {
  remote?: boolean;
  /** Where --remote credentials come from (default process.env). */
  env?: NodeJS.ProcessEnv;
}

/**
 * KV and R2; with the environment's PUBLIC_DOCUMENTS=r2 its KV writer also writes the public static copies
 * (withStaticDocuments), as the Worker's does. Throws InputError for missing --remote credentials.
 */
export async function openStore(config: RegistryConfig, options: OpenStoreOptions = {}): Promise<StoreHandle> {
  const store = options.remote ? await openRemoteStore(config, options.env ?? process.env) : await openLocalStore(config);
  return withStaticDocuments(store, config.publicDocuments ?? null);
}

/** KV only (tokens, keys): --remote needs no R2 credentials. Throws InputError for missing --remote credentials. */
export async function openKvStore(
  config: RegistryConfig,
  options: Pick<OpenStoreOptions, 'remote' | 'env'> = {},
): Promise<Pick<StoreHandle, 'kv' | 'description' | 'close'>> {
  return options.remote ? openRemoteKv(config, options.env ?? process.env) : openLocalStore(config);
}

/** An operator command's store: KV always, R2 unless the command only reads. */
export type CommandStore = Pick<StoreHandle, 'kv' | 'description' | 'close'> & {
  blobs: StoreHandle['blobs'] | null;
  /** Where the command's audit entries go (R2, for `audited`); null for a command that only reads. */
  audit: { blobs: StoreHandle['blobs'] } | null;
};

/**
 * The store of an operator command (token, keys, publisher): one that only reads (`readOnly`: `list`) opens KV
 * alone, so --remote needs no R2 credentials; one that writes opens R2 too, where its audit entry goes.
 * Throws InputError for missing --remote credentials.
 */
export async function openCommandStore(config: RegistryConfig, options: { remote?: boolean; readOnly: boolean }): Promise<CommandStore> {
  if (options.readOnly) return { ...(await openKvStore(config, { remote: options.remote })), blobs: null, audit: null };
  const store = await openStore(config, { remote: options.remote });
  return Object.assign(store, { audit: { blobs: store.blobs } });
}
