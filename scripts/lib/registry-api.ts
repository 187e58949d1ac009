import { printable } from '../../src/store/audit/display';
import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import { InputError } from '../../src/protocol/errors';
import { publishCredential, type PublishCredential } from './ci-credentials';
import { CRASH_ENV, KILL_ENV, progressLog } from './progress';
import { timing } from './timing';
import type { SessionFile, UploadSessionBody } from '../../src/protocol/publish-api';

/**
 * The client side of the Worker's publish API (`--registry URL` of
 * publish-provider and publish-module; the routes are src/routes/publish/):
 * POST the manifest, PUT each file streamed from disk (in the parts the
 * server asks for), POST commit. The credential comes from the environment
 * (ci-credentials.ts) and is never printed. A refusal (4xx) becomes an
 * InputError with the server's message (exit 1); a 5xx, 503 included, or a
 * network failure an Error (exit 3: running again is safe — the server
 * publishes only at commit, and a re-run of a committed version is "unchanged").
 * A redirect (3xx) is refused, not followed (exit 1): the credential goes
 * only to the address given.
 */

/** How many files sent whole are uploaded at once. */
const UPLOAD_CONCURRENCY = 4;

export interface UploadableFile {
  filename: string;
  size: number;
  /** A file on disk, or bytes in memory. */
  path?: string;
  bytes?: Uint8Array;
}

/** The parts of a started session (src/protocol/publish-api.ts) the client reads. */
type Session = Pick<UploadSessionBody, 'upload' | 'part_size' | 'files' | 'with_manifest' | 'commit_url'>;

export class RegistryClient {
  private constructor(
    private readonly base: string,
    private readonly credential: PublishCredential,
    /** Progress lines, with the CLI's test hooks (EDGE_REGISTRY_TEST_KILL_AT=upload#2 kills the client before its second file). */
    private readonly progress: ReturnType<typeof progressLog>,
    /** The local publish (localRegistryClient): each request (the uploads together) holding the local state's write lock; refusals as the Worker words them. */
    private readonly local: { exclusive<T>(call: () => Promise<T>): Promise<T> } | null = null,
  ) {}

  /** True while this client's uploads run inside one hold of the local state's write lock (uploadAndCommit). */
  private holding = false;

  /**
   * A client for the registry Worker the local publish serves on the local state (stores/local.ts, on
   * 127.0.0.1), with the short-lived publish token `bearer`. Each request runs inside `exclusive` (the
   * local state's write lock, which other local writers take too; the uploads side by side inside one hold
   * of it: uploadAndCommit); a refusal is an InputError with the
   * Worker's message alone (as the local publish has always worded it).
   */
  static local(
    registry: { origin: string; exclusive<T>(call: () => Promise<T>): Promise<T> },
    bearer: string,
    env: NodeJS.ProcessEnv,
    log: (line: string) => void,
  ): RegistryClient {
    return new RegistryClient(
      registry.origin,
      { bearer, kind: 'token', source: 'a publish token for this run' },
      progressLog(log, env[CRASH_ENV], env[KILL_ENV]),
      registry,
    );
  }

  /** A client for the registry at `url` with the environment's credential. Throws InputError for a bad URL or no credential. */
  static async open(url: string, env: NodeJS.ProcessEnv, log: (line: string) => void): Promise<RegistryClient> {
    let base: URL;
    try {
      base = new URL(url);
    } catch {
      throw new InputError(`--registry "${url}" is not a URL; give the registry's base URL, e.g. https://registry.acme.com`);
    }
    if (base.protocol !== 'https:' && !(base.protocol === 'http:' && ['localhost', '127.0.0.1', '[::1]'].includes(base.hostname))) {
      throw new InputError(`--registry ${url}: use https:// (http:// only for a registry on this machine)`);
    }
    const credential = await publishCredential(url, env);
    log(`publishing to ${base.origin} with ${credential.source}`);
    // Every route and every URL the server returns is path-absolute from the origin.
    return new RegistryClient(base.origin, credential, progressLog(log, env[CRASH_ENV], env[KILL_ENV]));
  }

  /**
   * Starts a publish at `path` (/v1/publish/…) with `manifest`. Returns the
   * server's answer: a result when nothing is to be uploaded (dry run,
   * unchanged, repaired), else the upload session.
   */
  async start<R>(path: string, manifest: object): Promise<{ result: R } | { session: Session }> {
    const response = await this.request(path, () => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(manifest) }));
    const body = (await response.json()) as R & Session;
    return response.status === 201 ? { session: body } : { result: body };
  }

  /**
   * Uploads every file of the session (each from `files`), then commits; returns the server's result.
   * Files sent in one PUT go up to UPLOAD_CONCURRENCY at a time (each stages its own object: the server
   * keeps no per-session state between them), for the local publish all inside one hold of the local
   * state's write lock; a file sent in parts goes alone, part after part, as before.
   * Progress lines come in the order of `files` (the manifest's) as each upload starts, a file the server
   * took with the manifest (`with_manifest`) reported there too, without a request; after a failure nothing
   * new starts, the uploads in flight finish, and the error of the first file (in that order) that failed is thrown.
   */
  async uploadAndCommit<R>(session: Session, files: readonly UploadableFile[]): Promise<R> {
    const uploads = session.files.map((wanted) => {
      const file = files.find((f) => f.filename === wanted.filename);
      if (!file) throw new Error(`the server asked for ${wanted.filename}, which this publish does not have`);
      return { wanted, file };
    });
    // Files the server took with the manifest: reported where the manifest lists them, as uploads (they were sent), not sent again.
    const withManifest = new Set(session.with_manifest ?? []);
    const steps = files.flatMap((file): { file: UploadableFile; wanted: SessionFile | null }[] =>
      withManifest.has(file.filename) ? [{ file, wanted: null }] : uploads.filter((u) => u.file === file).map((u) => ({ file, wanted: u.wanted })),
    );
    const failures: { index: number; error: unknown }[] = [];
    const inFlight = new Set<Promise<void>>();
    const upload = async (index: number, wanted: SessionFile, file: UploadableFile) => {
      try {
        for (let part = 1; part <= wanted.parts; part++) {
          const start = (part - 1) * session.part_size;
          const end = wanted.parts === 1 ? file.size : Math.min(file.size, start + session.part_size);
          await this.request(
            `${wanted.url}${wanted.parts > 1 ? `?part=${part}` : ''}`,
            () =>
              ({
                method: 'PUT',
                headers: { 'content-length': String(end - start), 'content-type': 'application/octet-stream' },
                body: body(file, start, end),
                duplex: 'half',
              }) as RequestInit,
          );
        }
      } catch (error) {
        failures.push({ index, error });
      }
    };
    const uploadAll = async () => {
      for (const [index, { wanted, file }] of steps.entries()) {
        if (wanted === null) {
          if (failures.length > 0) break;
          this.progress({ step: 'upload', detail: `${file.filename} (${(file.size / 1e6).toFixed(2)} MB)` });
          continue;
        }
        // A file in parts waits for the others and goes alone; a whole one waits for a free slot.
        while (inFlight.size > 0 && (wanted.parts > 1 || inFlight.size >= UPLOAD_CONCURRENCY)) await Promise.race(inFlight);
        if (failures.length > 0) break;
        this.progress({
          step: 'upload',
          detail: `${file.filename} (${(file.size / 1e6).toFixed(2)} MB${wanted.parts > 1 ? ` in ${wanted.parts} parts` : ''})`,
        });
        const running = upload(index, wanted, file).finally(() => inFlight.delete(running));
        inFlight.add(running);
        if (wanted.parts > 1) await running;
      }
      await Promise.all(inFlight);
    };
    // The local publish: the uploads side by side inside one hold of the local state's write lock (taken per
    // request, they would go one after another, each waiting for the lock).
    if (this.local) {
      await this.local.exclusive(async () => {
        this.holding = true;
        try {
          await uploadAll();
        } finally {
          this.holding = false;
        }
      });
    } else await uploadAll();
    if (failures.length > 0) throw failures.sort((a, b) => a.index - b.index)[0]!.error;
    this.progress({ step: 'record', detail: 'committing' });
    const answer = this.request(session.commit_url, () => ({ method: 'POST' }));
    // A silent step for the kill hook (EDGE_REGISTRY_TEST_KILL_AT=commit-sent): the commit on its way or answered.
    await Promise.race([answer.then(noop, noop), new Promise((resolve) => setTimeout(resolve, 50))]);
    this.progress({ step: 'commit-sent', detail: '' });
    return (await answer).json() as Promise<R>;
  }

  /**
   * Sends the request `init()` describes (called again for a retry, so a streamed body starts over). A
   * connection the server closed before answering (a kept-alive connection it had just let go: undici's
   * "other side closed") is retried once on a new one; every request here is safe to send again (a PUT
   * stages the same bytes, a create starts another session, a commit of a committed version is
   * "unchanged"). Any other network failure, or a second, is an Error.
   */
  private async request(path: string, init: () => RequestInit): Promise<Response> {
    const local = this.local;
    if (!local) return this.send(path, init);
    // The local state's SQLite, shared with other processes' runtimes (another local publish finishing its work
    // after its answer, a `wrangler dev` on the same state), can answer busy inside the Worker: a 5xx the old
    // direct writes retried (stores/local-errors.ts). Every request here is safe to send again (above).
    for (let attempt = 1; ; attempt++) {
      try {
        return await (this.holding ? this.send(path, init) : local.exclusive(() => this.send(path, init)));
      } catch (error) {
        if (!(error instanceof RegistryServerError) || attempt >= LOCAL_ATTEMPTS) throw error;
        await new Promise((resolve) => setTimeout(resolve, 50 * 2 ** attempt + Math.random() * 50));
      }
    }
  }

  private async send(path: string, init: () => RequestInit): Promise<Response> {
    let response: Response;
    const url = new URL(path, this.base);
    let method: string | undefined;
    for (let attempt = 1; ; attempt++) {
      const request = init();
      method = request.method;
      timing(`send ${method} ${url.pathname}`);
      try {
        response = await fetch(url, {
          ...request,
          headers: { ...(request.headers as Record<string, string>), authorization: `Bearer ${this.credential.bearer}` },
          // Never followed: the credential is not sent on to another address.
          redirect: 'manual',
        });
        break;
      } catch (error) {
        const cause = (error as { cause?: Error & { code?: string } }).cause;
        if (attempt === 1 && cause?.code !== undefined && CLOSED_BEFORE_ANSWER.has(cause.code)) continue;
        throw new Error(`${method} ${this.base}: ${(error as Error).message}${cause ? ` (${cause.message})` : ''}`);
      }
    }
    timing(`answer ${response.status} ${method} ${url.pathname}`);
    if (response.ok) return response;
    const message = await errorMessage(response);
    if (response.status >= 300 && response.status < 400) {
      const location = response.headers.get('location');
      throw new InputError(
        `the registry answered ${response.status} (a redirect${location ? ` to ${printable(location)}` : ''}); give --registry the address it redirects to`,
        response.status,
      );
    }
    if (response.status >= 400 && response.status < 500)
      throw new InputError(this.local ? message : `the registry refused the publish (${response.status}): ${message}`, response.status);
    throw new RegistryServerError(response.status, message);
  }
}

const noop = () => undefined;

/** How often a local publish sends a request the local registry answered with a 5xx (busy local state): 4 tries, ~1.5 s in all. */
const LOCAL_ATTEMPTS = 4;

/** The registry answered 5xx: its own or its storage's failure, not the publisher's input (exit 3 in the CLI). */
export class RegistryServerError extends Error {
  constructor(
    readonly status: number,
    serverMessage: string,
  ) {
    super(`the registry answered ${status}: ${serverMessage}`);
    this.name = 'RegistryServerError';
  }
}

/** Socket errors meaning the server closed the connection before answering (undici's UND_ERR_SOCKET: "other side closed"). */
const CLOSED_BEFORE_ANSWER = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE']);

function body(file: UploadableFile, start: number, end: number): BodyInit {
  if (file.bytes) return file.bytes.subarray(start, end);
  return Readable.toWeb(createReadStream(file.path!, { start, end: end - 1, highWaterMark: 1 << 20 })) as unknown as BodyInit;
}

/** The server's error message, control characters escaped (it may quote a CI token's claims: never sent raw to a terminal). */
async function errorMessage(response: Response): Promise<string> {
  const text = await response.text().catch(() => '');
  try {
    const errors = (JSON.parse(text) as { errors?: unknown }).errors;
    if (Array.isArray(errors) && typeof errors[0] === 'string') return printable(errors.join('; '));
  } catch {
    // not JSON
  }
  return printable(text.slice(0, 300) || response.statusText);
}
