import { InputError } from '../../../src/protocol/index';
import type { RegistryConfig } from '../config';
import type { StoreHandle } from './handle';
import { KvRestStore } from './kv-rest';
import { R2S3Store, type R2S3Options } from './r2-s3';

/**
 * --remote: the same KvStore/BlobStore interfaces over Cloudflare's APIs,
 * KV through the REST API (./kv-rest.ts), R2 through its S3-compatible API
 * (./r2-s3.ts). Credentials come from the environment and are sent only in
 * request headers, never logged.
 */

/** Environment variables --remote reads. */
export const REMOTE_ENV = {
  accountId: 'CLOUDFLARE_ACCOUNT_ID',
  apiToken: 'CLOUDFLARE_API_TOKEN',
  apiBaseUrl: 'CLOUDFLARE_API_BASE_URL',
  r2AccessKeyId: 'R2_ACCESS_KEY_ID',
  r2SecretAccessKey: 'R2_SECRET_ACCESS_KEY',
  r2Endpoint: 'R2_ENDPOINT',
} as const;

/**
 * Opens the remote store of `config` from the environment. Throws InputError
 * naming every missing variable (never printing values).
 */
export function openRemoteStore(
  config: Pick<RegistryConfig, 'kvNamespaceId' | 'bucketName'>,
  env: NodeJS.ProcessEnv = process.env,
  tuning: Pick<R2S3Options, 'multipartThreshold' | 'partSize' | 'onProgress' | 'region'> = {},
): StoreHandle {
  const missing = [REMOTE_ENV.accountId, REMOTE_ENV.apiToken, REMOTE_ENV.r2AccessKeyId, REMOTE_ENV.r2SecretAccessKey].filter((name) => !env[name]);
  if (missing.length > 0) {
    throw new InputError(
      `--remote needs ${missing.join(', ')} in the environment (an API token with Workers KV edit rights, and an R2 API token's S3 access key pair)`,
    );
  }
  const accountId = env[REMOTE_ENV.accountId]!;
  const endpoint = env[REMOTE_ENV.r2Endpoint] || `https://${accountId}.r2.cloudflarestorage.com`;
  const kv = new KvRestStore({
    accountId,
    namespaceId: config.kvNamespaceId,
    apiToken: env[REMOTE_ENV.apiToken]!,
    ...(env[REMOTE_ENV.apiBaseUrl] ? { apiBaseUrl: env[REMOTE_ENV.apiBaseUrl] } : {}),
  });
  const blobs = new R2S3Store({
    endpoint,
    bucket: config.bucketName,
    accessKeyId: env[REMOTE_ENV.r2AccessKeyId]!,
    secretAccessKey: env[REMOTE_ENV.r2SecretAccessKey]!,
    ...tuning,
  });
  return {
    kv,
    blobs,
    description: `remote KV namespace ${config.kvNamespaceId} and R2 bucket ${config.bucketName}`,
    close: async () => {},
  };
}

/**
 * The remote KV namespace alone (tokens and keys need no R2, so no R2
 * credentials are asked for). Throws InputError naming missing variables.
 */
export function openRemoteKv(
  config: Pick<RegistryConfig, 'kvNamespaceId'>,
  env: NodeJS.ProcessEnv = process.env,
): Pick<StoreHandle, 'kv' | 'description' | 'close'> {
  const missing = [REMOTE_ENV.accountId, REMOTE_ENV.apiToken].filter((name) => !env[name]);
  if (missing.length > 0) throw new InputError(`--remote needs ${missing.join(' and ')} (an API token with Workers KV Storage: Edit) in the environment`);
  const apiBaseUrl = env[REMOTE_ENV.apiBaseUrl];
  return {
    kv: new KvRestStore({
      accountId: env[REMOTE_ENV.accountId]!,
      namespaceId: config.kvNamespaceId,
      apiToken: env[REMOTE_ENV.apiToken]!,
      ...(apiBaseUrl ? { apiBaseUrl } : {}),
    }),
    description: `remote KV namespace ${config.kvNamespaceId}`,
    close: async () => {},
  };
}
