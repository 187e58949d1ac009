import { signingKeysKey } from '../layout';
import type { KvStore } from '../store';
import type { SigningKey } from '../types';

// A namespace's public signing keys (KV signing-keys/HOST/NS): what download documents name as the signer.

/** The namespace's public signing keys, oldest first. */
export async function readSigningKeys(kv: KvStore, hostname: string, namespace: string): Promise<SigningKey[]> {
  const text = await kv.get(signingKeysKey(hostname, namespace), 'text');
  return text === null ? [] : (JSON.parse(text) as SigningKey[]);
}

export async function writeSigningKeys(kv: KvStore, hostname: string, namespace: string, keys: readonly SigningKey[]): Promise<void> {
  await kv.put(signingKeysKey(hostname, namespace), JSON.stringify(keys));
}
