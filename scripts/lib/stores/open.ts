import type { RegistryConfig } from '../config';
import { openLocalStore } from './local';
import { type StoreHandle } from './handle';
import { openRemoteKv, openRemoteStore } from './remote';
import type { R2S3Options } from './r2-s3';

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
  /** Multipart tuning and upload progress for --remote. */
  tuning?: Pick<R2S3Options, 'multipartThreshold' | 'partSize' | 'onProgress' | 'region'>;
}

/** KV and R2. Throws InputError for missing --remote credentials. */
export async function openStore(config: RegistryConfig, options: OpenStoreOptions = {}): Promise<StoreHandle> {
  return options.remote ? openRemoteStore(config, options.env ?? process.env, options.tuning) : openLocalStore(config);
}

/** KV only (tokens, keys): --remote needs no R2 credentials. Throws InputError for missing --remote credentials. */
export async function openKvStore(
  config: RegistryConfig,
  options: Pick<OpenStoreOptions, 'remote' | 'env'> = {},
): Promise<Pick<StoreHandle, 'kv' | 'description' | 'close'>> {
  return options.remote ? openRemoteKv(config, options.env ?? process.env) : openLocalStore(config);
}
