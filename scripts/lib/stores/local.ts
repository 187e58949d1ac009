import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { readDevVars, SIGNING_KEY_SECRET } from '../dev/vars';
import { registryBundle } from './registry-bundle';
import { loadMiniflare } from './code-cache';
import type { BlobHead, BlobStore, KvStore } from '../../../src/store/store';
import { compatibilityDate, type RegistryConfig } from '../config';
import { fixedParts } from './parts';
import { LOCAL_RUNTIME_SCRIPT, dispatchKv, dispatchR2, type Dispatch, type PutOptions, type R2Like } from './local-runtime';
import { tieLocalRuntimeToThisProcess } from './workerd-child';
import type { StoreHandle } from './handle';
import { StateLock } from './state-lock';
import { isTransientLocalError } from './local-errors';

/**
 * The local state `wrangler dev` (`npm start`) serves: Miniflare's KV and R2
 * bindings over the same persist root, namespace id and bucket name as
 * wrangler.toml. The state is SQLite in WAL mode plus blob files, so a
 * running `wrangler dev` sees what is written here (checked by the tests);
 * it reads version lists again after INDEX_CACHE_SECONDS.
 *
 * Opens the local state of `config`; creates the persist root when missing.
 */
export async function openLocalStore(config: LocalConfig, options: { registry?: LocalRegistryOptions } = {}): Promise<StoreHandle> {
  mkdirSync(config.localPersistRoot, { recursive: true });
  const registry = options.registry ? await registryWorker(config, options.registry) : null;
  // Starting the local runtime can meet a busy SQLite too (a running `wrangler dev` on the same state, another
  // publish starting): the start takes the state's write lock, and a runtime that failed to start starts again.
  const lock = new StateLock(join(config.localPersistRoot, '.edge-registry-write.lock'));
  return retryBusy(
    () => lock.run(() => startLocalStore(config, registry, lock)),
    20,
    (error) => (error as { code?: string })?.code === 'ERR_RUNTIME_FAILURE',
  );
}

type LocalConfig = Pick<RegistryConfig, 'localPersistRoot' | 'kvNamespaceId' | 'bucketName'> &
  Partial<Pick<RegistryConfig, 'compatibilityDate' | 'projectRoot' | 'vars' | 'hostname'>>;

/** The registry Worker to serve beside the store: `hostname` overrides REGISTRY_HOSTNAME (--hostname). */
export interface LocalRegistryOptions {
  hostname?: string;
}

/**
 * The registry Worker as `npm start` serves it: the bundle `wrangler deploy` makes, minified (registry-bundle.ts),
 * wrangler.toml's vars (REGISTRY_HOSTNAME replaced by `hostname` when given), the project's .dev.vars
 * secrets (SIGNING_KEY_SECRET from this process's environment first), the DOWNLOADS Durable Object; KV, R2 and the Durable Object on the same persist root.
 */
async function registryWorker(config: LocalConfig, options: LocalRegistryOptions): Promise<{ worker: WorkerOptions; hostname: string }> {
  const bundle = await registryBundle();
  const hostname = options.hostname ?? config.hostname ?? config.vars?.REGISTRY_HOSTNAME ?? 'registry.example.com';
  return {
    hostname,
    worker: {
      name: 'registry',
      modules: [{ type: 'ESModule', path: bundle }],
      modulesRoot: dirname(bundle),
      compatibilityDate: config.compatibilityDate ?? compatibilityDate(),
      bindings: {
        ...(config.vars ?? {}),
        ...(config.projectRoot ? readDevVars(config.projectRoot) : {}),
        // The secret that opens the registry's keys, when the operator's environment has it (as `npm run keys` reads it).
        ...(process.env[SIGNING_KEY_SECRET] ? { [SIGNING_KEY_SECRET]: process.env[SIGNING_KEY_SECRET] } : {}),
        REGISTRY_HOSTNAME: hostname,
      },
      kvNamespaces: { REGISTRY_KV: config.kvNamespaceId },
      r2Buckets: { REGISTRY_R2: config.bucketName },
      durableObjects: { DOWNLOADS: { className: 'DownloadCounter', useSQLite: true } },
    },
  };
}

type WorkerOptions = Record<string, unknown> & { name: string };

async function startLocalStore(config: LocalConfig, registry: { worker: WorkerOptions; hostname: string } | null, lock: StateLock): Promise<StoreHandle> {
  // A killed CLI must not leave its runtime running (and holding the state open).
  tieLocalRuntimeToThisProcess();
  // Loaded here, not at the top: loading miniflare costs ~0.2 s of CPU, which publishing through the API never needs.
  // required, not import()ed: miniflare is CommonJS, and import() of it first has Node scan its 3 MB entry for
  // the export names and module syntax (import 0.36–0.73 s against require 0.19–0.28 s, measured 26 Nov 2026);
  // with V8's code cache for that entry (code-cache.ts).
  const { Miniflare } = loadMiniflare();
  // Both Workers listen on sockets of their own (127.0.0.1 only, free ports), so neither this process's store
  // calls nor the publish client's requests pass through Miniflare's entry Worker (dispatchFetch), which then
  // never runs: measured per local publish, ~10 ms of the runtime's CPU and ~10 ms of this process's for the
  // registry (27 Nov 2026), and for the store's calls the entry Worker's first compile (~20–30 ms of the
  // runtime's CPU) and dispatchFetch's own work on each call.
  // No Cache API either: nothing here reads a cached answer (the runtime lives for one command, and a cache
  // it kept would be its own, not `npm start`'s), and without it workerd runs one service less (~15 ms of
  // its CPU and ~15 ms of this process's at the start, measured 27 Nov 2026); caches.default is then a no-op.
  const ownSocketNoCache = { unsafeDirectSockets: [{ host: '127.0.0.1', port: 0 }], cache: false };
  const storeWorker = {
    name: 'local-store',
    modules: true,
    script: LOCAL_RUNTIME_SCRIPT,
    compatibilityDate: config.compatibilityDate ?? compatibilityDate(),
    kvNamespaces: { REGISTRY_KV: config.kvNamespaceId },
    r2Buckets: { REGISTRY_R2: config.bucketName },
    ...ownSocketNoCache,
  };
  // No `request.cf` object (`cf: false`): it is given only to requests through the entry Worker, which none
  // takes; without it Miniflare does not look for its cached copy or fetch one from workers.cloudflare.com
  // at every start (offline: a failed request each time; ~15 ms of this process's CPU, measured 27 Nov 2026).
  const shared = { defaultPersistRoot: config.localPersistRoot, cf: false };
  // With the registry: one runtime, two Workers on the same bindings; the publish client is given the
  // registry's origin.
  const mf = new Miniflare(
    registry
      ? {
          workers: [{ ...registry.worker, ...ownSocketNoCache }, storeWorker] as unknown as import('miniflare').WorkerOptions[],
          ...shared,
          host: '127.0.0.1',
          port: 0,
        }
      : { ...storeWorker, ...shared },
  );
  try {
    await mf.ready;
    const [origin, storeOrigin] = await Promise.all([
      registry ? mf.unsafeGetDirectURL(registry.worker.name).then((url) => url.origin) : '',
      mf.unsafeGetDirectURL(storeWorker.name).then((url) => url.origin),
    ]);
    const dispatch: Dispatch = (path, init) => fetch(`${storeOrigin}${path}`, init);
    return {
      kv: lockedKv(dispatchKv(dispatch), lock),
      blobs: new LocalBlobStore(dispatchR2(dispatch), lock),
      description: `local state ${config.localPersistRoot}`,
      close: () => mf.dispose(),
      ...(registry ? { registry: { origin, hostname: registry.hostname, exclusive: (call) => lock.run(call) } } : {}),
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
  constructor(
    private readonly r2: R2Like,
    private readonly lock: StateLock,
  ) {}

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
      // Exactly the view's bytes, whatever buffer it is a view on.
      const exact = value instanceof Uint8Array && (value.byteOffset !== 0 || value.byteLength !== value.buffer.byteLength) ? value.slice() : value;
      return write(() => this.r2.put(key, exact, options));
    }
    if (options?.onlyIf) throw new Error(`local store: a conditional put of a stream is not supported (${key})`);
    const parts = fixedParts(value, LOCAL_PART_SIZE);
    const first = await parts.next();
    const second = first.done ? first : await parts.next();
    if (second.done) {
      const bytes = first.done ? new Uint8Array(0) : first.value;
      return write(() => this.r2.put(key, bytes, options));
    }
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
 * Calls `call`, again with jittered backoff while it fails with a transient
 * error (isTransientLocalError: SQLite busy, a lost connection to the local
 * runtime) and `attempts` are left: every call made here is idempotent.
 * Throws the last error, or at once any error that is not transient (nor `alsoTransient`).
 */
export async function retryBusy<T>(call: () => Promise<T>, attempts = 20, alsoTransient: (error: unknown) => boolean = () => false): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      const transient = isTransientLocalError(error) || alsoTransient(error);
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
