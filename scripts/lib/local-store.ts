import { mkdirSync } from 'node:fs';
import { Miniflare } from 'miniflare';
import type { BlobHead, BlobStore, KvStore } from '../../src/store/types';
import type { RegistryConfig } from './config';

/**
 * The local state `wrangler dev` (`npm start`) serves: Miniflare's KV and R2
 * bindings over the same persist root, namespace id and bucket name as
 * wrangler.toml. The state is SQLite in WAL mode plus blob files, so a
 * running `wrangler dev` sees what is written here (checked by the tests);
 * it reads version lists again after INDEX_CACHE_SECONDS.
 */
export interface StoreHandle {
  kv: KvStore;
  blobs: BlobStore;
  /** Where the store is, for messages ("local state .wrangler/state/v3", "remote …"). */
  description: string;
  /** Releases the store (stops Miniflare); call once, also after errors. */
  close(): Promise<void>;
}

/** Opens the local state of `config`; creates the persist root when missing. */
export async function openLocalStore(config: Pick<RegistryConfig, 'localPersistRoot' | 'kvNamespaceId' | 'bucketName'>): Promise<StoreHandle> {
  mkdirSync(config.localPersistRoot, { recursive: true });
  const mf = new Miniflare({
    modules: true,
    script: 'export default { fetch() { return new Response(null, { status: 404 }); } }',
    compatibilityDate: '2026-04-20',
    defaultPersistRoot: config.localPersistRoot,
    kvNamespaces: { REGISTRY_KV: config.kvNamespaceId },
    r2Buckets: { REGISTRY_R2: config.bucketName },
  });
  try {
    const kv = await mf.getKVNamespace('REGISTRY_KV');
    const r2 = await mf.getR2Bucket('REGISTRY_R2');
    return {
      kv: kv as unknown as KvStore,
      blobs: new LocalBlobStore(r2 as unknown as R2Like),
      description: `local state ${config.localPersistRoot}`,
      close: () => mf.dispose(),
    };
  } catch (error) {
    await mf.dispose();
    throw error;
  }
}

type PutOptions = { httpMetadata?: { contentType?: string }; customMetadata?: Record<string, string> };

/** The parts of Miniflare's R2 binding used here. */
interface R2Like {
  head(key: string): Promise<BlobHead | null>;
  put(key: string, value: Uint8Array | string | ArrayBuffer, options?: PutOptions): Promise<unknown>;
  createMultipartUpload(key: string, options?: PutOptions): Promise<{
    uploadPart(partNumber: number, value: Uint8Array): Promise<{ partNumber: number; etag: string }>;
    complete(parts: { partNumber: number; etag: string }[]): Promise<unknown>;
    abort(): Promise<void>;
  }>;
}

/** Local R2 accepts streams only of known length, so streams are sent as one buffer or, when large, as a multipart upload. */
const LOCAL_PART_SIZE = 64 * 1024 * 1024;

class LocalBlobStore implements BlobStore {
  constructor(private readonly r2: R2Like) {}

  head(key: string): Promise<BlobHead | null> {
    return this.r2.head(key);
  }

  async put(key: string, value: ReadableStream | ArrayBuffer | Uint8Array | string, options?: PutOptions): Promise<unknown> {
    if (!(value instanceof ReadableStream)) return this.r2.put(key, value, options);
    const parts = fixedParts(value, LOCAL_PART_SIZE);
    const first = await parts.next();
    const second = first.done ? first : await parts.next();
    if (second.done) return this.r2.put(key, first.done ? new Uint8Array(0) : first.value, options);
    const upload = await this.r2.createMultipartUpload(key, options);
    try {
      const uploaded = [await upload.uploadPart(1, first.value as Uint8Array), await upload.uploadPart(2, second.value)];
      for await (const part of parts) uploaded.push(await upload.uploadPart(uploaded.length + 1, part));
      return await upload.complete(uploaded);
    } catch (error) {
      await upload.abort().catch(() => undefined);
      throw error;
    }
  }
}

/** Splits a stream into chunks of exactly `size` bytes (the last may be shorter). */
async function* fixedParts(stream: ReadableStream<Uint8Array>, size: number): AsyncGenerator<Uint8Array> {
  let buffer = new Uint8Array(size);
  let filled = 0;
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      let offset = 0;
      while (offset < value.byteLength) {
        const take = Math.min(size - filled, value.byteLength - offset);
        buffer.set(value.subarray(offset, offset + take), filled);
        filled += take;
        offset += take;
        if (filled === size) {
          yield buffer;
          buffer = new Uint8Array(size);
          filled = 0;
        }
      }
    }
    if (filled > 0) yield buffer.subarray(0, filled);
  } finally {
    reader.releaseLock();
  }
}
