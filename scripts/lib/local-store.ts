import { linkSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { Miniflare } from 'miniflare';
import type { BlobHead, BlobStore, BlobWriteCondition, KvStore } from '../../src/store/types';
import { compatibilityDate, type RegistryConfig } from './config';
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
export async function openLocalStore(config: Pick<RegistryConfig, 'localPersistRoot' | 'kvNamespaceId' | 'bucketName'> & Partial<Pick<RegistryConfig, 'compatibilityDate'>>): Promise<StoreHandle> {
  mkdirSync(config.localPersistRoot, { recursive: true });
  const mf = new Miniflare({
    modules: true,
    script: 'export default { fetch() { return new Response(null, { status: 404 }); } }',
    compatibilityDate: config.compatibilityDate ?? compatibilityDate(),
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

type PutOptions = { httpMetadata?: { contentType?: string }; customMetadata?: Record<string, string>; onlyIf?: BlobWriteCondition };

/** The parts of Miniflare's R2 binding used here. */
interface R2Like {
  head(key: string): Promise<BlobHead | null>;
  get(key: string): Promise<(BlobHead & { text(): Promise<string> }) | null>;
  put(key: string, value: Uint8Array | string | ArrayBuffer, options?: PutOptions): Promise<{ etag: string } | null>;
  list(options: { prefix: string; cursor?: string; limit?: number }): Promise<{ objects: { key: string }[]; truncated: boolean; cursor?: string }>;
  delete(key: string): Promise<void>;
  createMultipartUpload(key: string, options?: PutOptions): Promise<{
    uploadPart(partNumber: number, value: Uint8Array): Promise<{ partNumber: number; etag: string }>;
    complete(parts: { partNumber: number; etag: string }[]): Promise<{ etag: string }>;
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

  async get(key: string): Promise<(BlobHead & { text(): Promise<string> }) | null> {
    // Read the body inside the retry: a busy error can surface while reading it.
    return retryBusy(async () => {
      const object = await this.r2.get(key);
      if (!object) return null;
      const text = await object.text();
      return { size: object.size, etag: object.etag, customMetadata: object.customMetadata ?? {}, text: async () => text };
    });
  }

  list(options: { prefix: string; cursor?: string; limit?: number }) {
    return retryBusy(() => this.r2.list(options));
  }

  delete(key: string): Promise<void> {
    return this.lock.run(() => retryBusy(() => this.r2.delete(key)));
  }

  /**
   * A conditional put (onlyIf) is evaluated and written in one SQLite
   * transaction by Miniflare's R2, so it stays atomic across processes; a
   * retry after a busy error re-evaluates the condition.
   */
  async put(key: string, value: ReadableStream | ArrayBuffer | Uint8Array | string, options?: PutOptions): Promise<{ etag: string } | null> {
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
/** Errors of the local runtime that go away on a retry (SQLite busy, a Miniflare loopback hiccup). */
const TRANSIENT_LOCAL_ERROR = /\b5\d\d\b|busy|locked|SQLITE|Unspecified error|ECONNRESET|ECONNREFUSED|socket hang up|other side closed|fetch failed|Network connection lost/i;

async function retryBusy<T>(call: () => Promise<T>, attempts = 12): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      const message = String((error as Error)?.message ?? error);
      const transient = TRANSIENT_LOCAL_ERROR.test(message) || (error as Error)?.name === 'AssertionError';
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
 * keeps concurrent publishes working. (Exclusion of whole publishes is the
 * provider lease's job, src/store/lease.ts; this only spaces out writes.)
 *
 * The lock file is written complete under a temporary name and then linked
 * into place, which is atomic and fails when the lock exists, so no reader
 * ever sees an empty or partial owner. A lock is stale when its owner's pid
 * on this host is gone, when it is older than STALE_LOCK_MS (no single write
 * takes that long), or when it is unreadable and older than 2 s (an empty
 * file left by an older version). A stale lock is renamed away — atomic, so
 * of two processes judging it stale only one removes it — and the remover
 * checks it removed exactly the lock it judged, putting back one it did not.
 */
const STALE_LOCK_MS = 60_000;

class StateLock {
  constructor(private readonly path: string) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    const token = await this.acquire();
    try {
      return await fn();
    } finally {
      // Remove only our own lock (a stale-lock taker may have replaced it).
      if (this.read()?.token === token) rmSync(this.path, { force: true });
    }
  }

  private async acquire(): Promise<string> {
    const deadline = Date.now() + 120_000;
    const token = `${process.pid}-${Math.random().toString(36).slice(2)}`;
    const temp = `${this.path}.${token}`;
    writeFileSync(temp, JSON.stringify({ pid: process.pid, host: hostname(), token, at: Date.now() }));
    try {
      for (;;) {
        try {
          linkSync(temp, this.path);
          return token;
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        }
        this.removeIfStale();
        if (Date.now() > deadline) {
          const owner = this.read();
          throw new Error(`the local state stayed locked for 120 s by ${owner ? `pid ${owner.pid}` : 'an unknown process'} (${this.path}); remove that file if no publish is running, then run again`);
        }
        await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 20));
      }
    } finally {
      rmSync(temp, { force: true });
    }
  }

  private read(): { pid: number; host: string; token: string; at: number } | null {
    try {
      const value = JSON.parse(readFileSync(this.path, 'utf8')) as { pid: number; host: string; token: string; at: number };
      return typeof value?.token === 'string' ? value : null;
    } catch {
      return null;
    }
  }

  private removeIfStale(): void {
    const owner = this.read();
    let stale: boolean;
    if (owner) {
      stale = Date.now() - owner.at > STALE_LOCK_MS || (owner.host === hostname() && !processExists(owner.pid));
    } else {
      try {
        stale = Date.now() - statSync(this.path).mtimeMs > 2000;
      } catch {
        return; // released meanwhile
      }
    }
    if (!stale) return;
    const tomb = `${this.path}.stale-${process.pid}-${Math.random().toString(36).slice(2)}`;
    try {
      renameSync(this.path, tomb);
    } catch {
      return; // someone else removed it first
    }
    let moved: { token: string } | null = null;
    try {
      moved = JSON.parse(readFileSync(tomb, 'utf8')) as { token: string };
    } catch {
      moved = null;
    }
    if ((moved?.token ?? null) !== (owner?.token ?? null)) {
      // We moved a fresh lock taken after our check: put it back (unless the path is taken again).
      try {
        linkSync(tomb, this.path);
      } catch {
        /* the path was taken again; its owner proceeds */
      }
    }
    rmSync(tomb, { force: true });
  }
}

function processExists(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}
