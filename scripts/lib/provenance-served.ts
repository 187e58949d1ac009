import { InputError, parseShasums, sha256Hex } from '../../src/protocol/index';

/**
 * What `npm run verify` (provenance-verify.ts) checks a statement against: the registry read as a consumer reads
 * it, and the files it serves for a version with the SHA-256 of their bytes. A file that is not there or does not
 * match what the registry itself lists is a ProvenanceMismatchError.
 */

/** A statement, or what the registry serves, does not match (exit 1): the message names the first difference. */
export class ProvenanceMismatchError extends InputError {
  constructor(message: string) {
    super(`provenance does not match: ${message}`);
    this.name = 'ProvenanceMismatchError';
  }
}

/** Reads the registry's routes as a consumer: answers 2xx, or throws naming what was asked for. */
export interface RegistryReader {
  base: URL;
  /** The response to `url` (relative to the registry); 404 is a ProvenanceMismatchError, another failure an InputError. */
  get(url: string, what: string): Promise<Response>;
  /** The bytes of `url`, as `get`. */
  bytes(url: string, what: string): Promise<Uint8Array>;
}

export function registryReader(options: { address: string; registry?: string; token?: string; fetch?: typeof fetch }): RegistryReader {
  const doFetch = options.fetch ?? fetch;
  const base = new URL(options.registry ?? `https://${options.address.split('/')[0]}`);
  const headers: Record<string, string> = options.token ? { authorization: `Bearer ${options.token}` } : {};
  const get = async (url: string, what: string): Promise<Response> => {
    let response: Response;
    try {
      response = await doFetch(new URL(url, base), { headers, redirect: 'follow' });
    } catch (error) {
      // Unreachable, refused, or a certificate Node does not trust (NODE_EXTRA_CA_CERTS names a private CA): a fixable problem, exit 1.
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      throw new InputError(`${what}: could not fetch ${new URL(url, base).href}: ${cause?.code ?? cause?.message ?? (error as Error).message}`);
    }
    if (response.status === 404) throw new ProvenanceMismatchError(`${what} is not there (404 at ${url})`);
    if (!response.ok)
      throw new InputError(
        `${what}: ${url} answered ${response.status} ${(await response.text()).slice(0, 200)}${response.status === 401 ? ' (private registry: set EDGE_REGISTRY_TOKEN to a read token)' : ''}`,
      );
    return response;
  };
  return { base, get, bytes: async (url, what) => new Uint8Array(await (await get(url, what)).arrayBuffer()) };
}

/** The module package as served (the download's X-Terraform-Get): its file name → SHA-256 of its bytes. */
export async function servedModuleFiles(
  registry: RegistryReader,
  path: string[],
  { address, version }: { address: string; version: string },
): Promise<Map<string, string>> {
  const answer = await registry.get(`/v1/modules/${path.join('/')}/${encodeURIComponent(version)}/download`, `module ${address} ${version}`);
  const location = answer.headers.get('x-terraform-get');
  if (!location) throw new InputError(`the module download answered without X-Terraform-Get`);
  const url = new URL(location, answer.url || registry.base);
  const name = decodeURIComponent(url.pathname.slice(url.pathname.lastIndexOf('/') + 1));
  return new Map([[name, sha256Hex(await registry.bytes(url.href, 'the module package'))]]);
}

/**
 * Each platform's zip and SHA256SUMS as served (file name → SHA-256 of the downloaded bytes), after
 * check 3's first half: SHA256SUMS must list every zip with the digest of its bytes.
 */
export async function servedProviderFiles(
  registry: RegistryReader,
  path: string[],
  options: { address: string; version: string },
): Promise<Map<string, string>> {
  const [ns, type] = path as [string, string];
  const versions = (await (await registry.get(`/v1/providers/${ns}/${type}/versions`, `provider ${options.address}`)).json()) as {
    versions: { version: string; platforms: { os: string; arch: string }[] }[];
  };
  const entry = versions.versions.find((v) => v.version === options.version);
  if (!entry) throw new InputError(`${options.address} has no version ${options.version}`);
  const served = new Map<string, string>();
  let shasumsUrl = '';
  let shasumsName = '';
  for (const p of entry.platforms) {
    const doc = (await (
      await registry.get(`/v1/providers/${ns}/${type}/${options.version}/download/${p.os}/${p.arch}`, `the ${p.os}_${p.arch} download`)
    ).json()) as {
      filename: string;
      download_url: string;
      shasums_url: string;
    };
    served.set(doc.filename, sha256Hex(await registry.bytes(doc.download_url, doc.filename)));
    shasumsUrl = doc.shasums_url;
    shasumsName = decodeURIComponent(new URL(doc.shasums_url, registry.base).pathname.split('/').at(-1)!);
  }
  const sums = await registry.bytes(shasumsUrl, 'SHA256SUMS');
  const lines = new Map(parseShasums(new TextDecoder().decode(sums)).map((e) => [e.filename, e.sha256Hex]));
  for (const [name, digest] of served) {
    if (lines.get(name) !== digest)
      throw new ProvenanceMismatchError(`${shasumsName} lists ${name} as ${lines.get(name) ?? 'nothing'}, its bytes hash to ${digest}`);
  }
  served.set(shasumsName, sha256Hex(sums));
  return served;
}
