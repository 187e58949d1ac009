import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Miniflare } from 'miniflare';
import type { BlobHead, BlobStore, KvStore } from '../../src/store/types';
import type { RegistryConfig } from './config';
import { fixedParts } from './parts';

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
    const lock = new StateLock(join(config.localPersistRoot, '.edge-registry-write.lock'));
    return {
      kv: lockedKv(kv as unknown as KvStore, lock),
      blobs: new LocalBlobStore(r2 as unknown as R2Like, lock),
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
  constructor(private readonly r2: R2Like, private readonly lock: StateLock) {}

  head(key: string): Promise<BlobHead | null> {
    return retryBusy(() => this.r2.head(key));
  }

  async put(key: string, value: ReadableStream | ArrayBuffer | Uint8Array | string, options?: PutOptions): Promise<unknown> {
    const write = <T>(call: () => Promise<T>) => this.lock.run(() => retryBusy(call));
    if (!(value instanceof ReadableStream)) {
      // A view on a larger buffer would be sent whole; give the binding exactly the bytes.
      const exact = value instanceof Uint8Array && (value.byteOffset !== 0 || value.byteLength !== value.buffer.byteLength) ? value.slice() : value;
      return write(() => this.r2.put(key, exact, options));
    }
    const parts = fixedParts(value, LOCAL_PART_SIZE);
    const first = await parts.next();
    const second = first.done ? first : await parts.next();
    if (second.done) return write(() => this.r2.put(key, first.done ? new Uint8Array(0) : first.value, options));
    const upload = await write(() => this.r2.createMultipartUpload(key, options));
    try {
      const part = (n: number, bytes: Uint8Array) => write(() => upload.uploadPart(n, bytes));
      const uploaded = [await part(1, first.value as Uint8Array), await part(2, second.value)];
      for await (const bytes of parts) uploaded.push(await part(uploaded.length + 1, bytes));
      return await write(() => upload.complete(uploaded));
    } catch (error) {
      await write(() => upload.abort()).catch(() => undefined);
      throw error;
    }
  }
}

/**
 * Several processes may write the local state at once (concurrent publishes,
 * `wrangler dev` reading). Its SQLite then sometimes answers "busy", which
 * reaches us as a 500 from the binding; every call made here is idempotent,
 * so it is retried with jittered backoff.
 */
async function retryBusy<T>(call: () => Promise<T>, attempts = 12): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      const message = String((error as Error)?.message ?? error);
      const transient = /\b5\d\d\b|busy|locked|SQLITE|Unspecified error/i.test(message);
      if (!transient || attempt >= attempts) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.min(2000, 25 * 2 ** attempt) * (0.5 + Math.random())));
    }
  }
}

function lockedKv(kv: KvStore, lock: StateLock): KvStore {
  return {
    get: (key, type) => retryBusy(() => kv.get(key, type)),
    put: (key, value) => lock.run(() => retryBusy(() => kv.put(key, value))),
    delete: (key) => lock.run(() => retryBusy(() => kv.delete(key))),
    list: (options) => retryBusy(() => kv.list(options)),
  };
}

/**
 * A cross-process lock around each single write to the local state. The
 * state's SQLite files are opened by every process's own workerd, which
 * fails (rather than waits) when two write at once; taking turns per write
 * keeps concurrent publishes working while leaving them interleaved, so the
 * store's no-compare-and-swap logic is exercised as on Cloudflare. The lock
 * is a file created with O_EXCL holding the owner's pid; a lock whose owner
 * died (a killed publish) is taken over.
 */
class StateLock {
  constructor(private readonly path: string) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    await this.acquire();
    try {
      return await fn();
    } finally {
      rmSync(this.path, { force: true });
    }
  }

  private async acquire(): Promise<void> {
    const deadline = Date.now() + 120_000;
    for (;;) {
      try {
        writeFileSync(this.path, String(process.pid), { flag: 'wx' });
        return;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      if (this.ownerIsGone()) {
        rmSync(this.path, { force: true });
        continue;
      }
      if (Date.now() > deadline) throw new Error(`the local state is locked by another process (${this.path}); remove the file if no publish is running`);
      await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 20));
    }
  }

  private ownerIsGone(): boolean {
    let pid: number;
    try {
      pid = Number(readFileSync(this.path, 'utf8'));
    } catch {
      return false; // just released, or being written: try again
    }
    if (!Number.isInteger(pid) || pid <= 0) return false;
    try {
      process.kill(pid, 0);
      return false;
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'ESRCH';
    }
  }
}
