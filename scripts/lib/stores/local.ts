import { linkSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { Miniflare } from 'miniflare';
import type { BlobHead, BlobStore, BlobWriteCondition, KvStore } from '../../../src/store/store';
import { compatibilityDate, type RegistryConfig } from '../config';
import { fixedParts } from './parts';
import { LOCAL_RUNTIME_SCRIPT, dispatchKv, dispatchR2, type Dispatch, type PutOptions, type R2Like } from './local-runtime';
import { tieLocalRuntimeToThisProcess } from './workerd-child';
import type { StoreHandle } from './handle';

/**
 * The local state `wrangler dev` (`npm start`) serves: Miniflare's KV and R2
 * bindings over the same persist root, namespace id and bucket name as
 * wrangler.toml. The state is SQLite in WAL mode plus blob files, so a
 * running `wrangler dev` sees what is written here (checked by the tests);
 * it reads version lists again after INDEX_CACHE_SECONDS.
 *
 * Opens the local state of `config`; creates the persist root when missing.
 */
export async function openLocalStore(config: Pick<RegistryConfig, 'localPersistRoot' | 'kvNamespaceId' | 'bucketName'> & Partial<Pick<RegistryConfig, 'compatibilityDate'>>): Promise<StoreHandle> {
  mkdirSync(config.localPersistRoot, { recursive: true });
  // Starting the local runtime can meet a busy SQLite too (a running `wrangler dev` on the same state): start again.
  return retryBusy(() => startLocalStore(config));
}

async function startLocalStore(config: Pick<RegistryConfig, 'localPersistRoot' | 'kvNamespaceId' | 'bucketName'> & Partial<Pick<RegistryConfig, 'compatibilityDate'>>): Promise<StoreHandle> {
  // A killed CLI must not leave its runtime running (and holding the state open).
  tieLocalRuntimeToThisProcess();
  const mf = new Miniflare({
    modules: true,
    script: LOCAL_RUNTIME_SCRIPT,
    compatibilityDate: config.compatibilityDate ?? compatibilityDate(),
    defaultPersistRoot: config.localPersistRoot,
    kvNamespaces: { REGISTRY_KV: config.kvNamespaceId },
    r2Buckets: { REGISTRY_R2: config.bucketName },
  });
  try {
    await mf.ready;
    const dispatch: Dispatch = (url, init) => mf.dispatchFetch(url, init) as unknown as Promise<Response>;
    const lock = new StateLock(join(config.localPersistRoot, '.edge-registry-write.lock'));
    return {
      kv: lockedKv(dispatchKv(dispatch), lock),
      blobs: new LocalBlobStore(dispatchR2(dispatch), lock, dispatch),
      description: `local state ${config.localPersistRoot}`,
      close: () => mf.dispose(),
    };
  } catch (error) {
    await mf.dispose();
    throw error;
  }
}

/**
 * Streams are cut into parts of this size, each buffered once in node (R2
 * wants equal parts but the last, of at least 5 MiB): memory per write is
 * about one part, whatever the archive's size. One part or less is a plain put.
 */
const LOCAL_PART_SIZE = 8 * 1024 * 1024;

class LocalBlobStore implements BlobStore {
  constructor(private readonly r2: R2Like, private readonly lock: StateLock, private readonly dispatch: Dispatch) {}

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
   * retry after a busy error re-evaluates the condition. A stream is written
   * with a multipart upload, which makes the object visible only once
   * complete: a killed write leaves nothing readable (only an unfinished
   * upload, invisible to readers).
   */
  async put(key: string, value: ReadableStream | ArrayBuffer | Uint8Array | string, options?: PutOptions): Promise<{ etag: string } | null> {
    const write = <T>(call: () => Promise<T>) => this.lock.run(() => retryBusy(call));
    if (!(value instanceof ReadableStream)) {
      // A view on a larger buffer would be sent whole; give the binding exactly the bytes.
      const exact = value instanceof Uint8Array && (value.byteOffset !== 0 || value.byteLength !== value.buffer.byteLength) ? value.slice() : value;
      return write(() => this.r2.put(key, exact, options));
    }
    if (options?.onlyIf) throw new Error(`local store: a conditional put of a stream is not supported (${key})`);
    const parts = fixedParts(value, LOCAL_PART_SIZE);
    const first = await parts.next();
    const second = first.done ? first : await parts.next();
    if (second.done) {
      const bytes = first.done ? new Uint8Array(0) : first.value;
      return write(() => this.send<{ etag: string } | null>({ key }, bytes, { 'x-put-options': JSON.stringify(options ?? {}) }));
    }
    const upload = await write(() => this.r2.createMultipartUpload(key, options));
    try {
      const part = (n: number, bytes: Uint8Array) => write(() => this.send<{ partNumber: number; etag: string }>({ key, uploadId: upload.uploadId, part: String(n) }, bytes));
      const uploaded = [await part(1, first.value as Uint8Array), await part(2, second.value)];
      for await (const bytes of parts) uploaded.push(await part(uploaded.length + 1, bytes));
      return await write(() => upload.complete(uploaded));
    } catch (error) {
      await write(() => upload.abort()).catch(() => undefined);
      throw error;
    }
  }

  /** One PUT of `bytes` to LOCAL_RUNTIME_SCRIPT; its JSON answer, or an error carrying the status and message. */
  private async send<T>(query: Record<string, string>, bytes: Uint8Array, headers: Record<string, string> = {}): Promise<T> {
    const response = await this.dispatch(`http://local-store/__edge-registry/blob?${new URLSearchParams(query)}`, {
      method: 'PUT', body: bytes, headers: { ...headers, 'content-length': String(bytes.byteLength) },
    });
    if (!response.ok) throw new Error(`local R2 write of ${query.key} failed: ${response.status} ${await response.text()}`);
    return (await response.json()) as T;
  }
}

/**
 * Several processes may write the local state at once (concurrent publishes,
 * `wrangler dev` reading). Its SQLite then sometimes answers "busy", which
 * reaches us as a 500 from the binding; every call made here is idempotent,
 * so it is retried with jittered backoff.
 */
/**
 * Errors of the local runtime that go away on a retry (SQLite busy, a Miniflare loopback hiccup). workerd
 * turns a C++ exception such as "SQLite failed; database is locked: SQLITE_BUSY" into a JavaScript Error
 * whose whole message is "internal error; reference = ID" (the SQLite text goes only to workerd's stderr),
 * so that message counts as transient too.
 */
const TRANSIENT_LOCAL_ERROR = /\b5\d\d\b|busy|locked|SQLITE|internal error; reference =|Unspecified error|ECONNRESET|ECONNREFUSED|socket hang up|other side closed|fetch failed|Network connection lost/i;

export async function retryBusy<T>(call: () => Promise<T>, attempts = 20): Promise<T> {
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
