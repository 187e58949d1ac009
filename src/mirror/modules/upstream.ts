import { parseServiceDiscovery } from '../../protocol/discovery';
import { formatModuleAddress, type ModuleAddress } from '../../protocol/modules-v1';
import { UpstreamError, type UpstreamClient } from '../upstream-http';

/**
 * modules.v1 as a client (what Terraform asks an origin registry), for the
 * module proxy: service discovery (or the policy's `hosts` override), list
 * versions, and the download answer's package location. Every answer is
 * checked for what is used; anything else is an UpstreamError naming the URL.
 */

/** The modules.v1 base of `hostname` (absolute, ends with "/"): `override`, else discovery. */
export async function discoverModules(http: UpstreamClient, hostname: string, override?: string): Promise<string> {
  if (override !== undefined) return override;
  const url = `https://${hostname}/.well-known/terraform.json`;
  const { json, url: finalUrl } = await http.getJson(url, 'service discovery');
  let base: string | undefined;
  try {
    base = parseServiceDiscovery(json)['modules.v1'];
  } catch (error) {
    throw new UpstreamError(`service discovery ${finalUrl}: ${(error as Error).message}`);
  }
  if (base === undefined) throw new UpstreamError(`service discovery ${finalUrl}: no "modules.v1"; ${hostname} is not a module registry`);
  const resolved = new URL(base, finalUrl);
  if (!resolved.pathname.endsWith('/')) resolved.pathname += '/';
  return resolved.toString();
}

const SEMVER = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;

/** The versions the upstream lists for `address` (strict semver only); a 404 is UpstreamError(404) "not found on HOST". */
export async function listModuleVersions(http: UpstreamClient, base: string, address: ModuleAddress): Promise<string[]> {
  const url = new URL(`${address.namespace}/${address.name}/${address.system}/versions`, base).toString();
  let json: unknown;
  try {
    ({ json } = await http.getJson(url, 'list module versions'));
  } catch (error) {
    if (error instanceof UpstreamError && error.httpStatus === 404) {
      throw new UpstreamError(`module ${formatModuleAddress(address)} not found on ${address.hostname} (${url}: HTTP 404)`, 404);
    }
    throw error;
  }
  const modules = (json as { modules?: unknown } | null)?.modules;
  const versions = Array.isArray(modules) ? (modules[0] as { versions?: unknown } | undefined)?.versions : undefined;
  if (!Array.isArray(versions)) throw new UpstreamError(`list module versions ${url}: no "modules[0].versions" array`);
  return versions.flatMap((v: unknown) => {
    const version = (v as { version?: unknown } | null)?.version;
    return typeof version === 'string' && SEMVER.test(version) ? [version] : []; // a version Terraform could not pick is never proxied
  });
}

/**
 * The package location of `version` (X-Terraform-Get of a 204, or the
 * `location` of a 200 JSON answer) and the URL it is relative to. Throws
 * UpstreamError: 404 for an unknown version, 502 when neither is given.
 */
export async function moduleLocation(http: UpstreamClient, base: string, address: ModuleAddress, version: string): Promise<{ location: string; url: string }> {
  const url = new URL(`${address.namespace}/${address.name}/${address.system}/${version}/download`, base).toString();
  let answer: Awaited<ReturnType<UpstreamClient['getModuleDownload']>>;
  try {
    answer = await http.getModuleDownload(url, 'module download');
  } catch (error) {
    if (error instanceof UpstreamError && error.httpStatus === 404) {
      throw new UpstreamError(`module ${formatModuleAddress(address)} ${version} not found on ${address.hostname} (${url}: HTTP 404)`, 404);
    }
    throw error;
  }
  const fromJson = (answer.json as { location?: unknown } | null)?.location;
  const location = answer.header ?? (typeof fromJson === 'string' ? fromJson : null);
  if (!location) throw new UpstreamError(`module download ${answer.url}: neither an X-Terraform-Get header nor a "location"`);
  return { location, url: answer.url };
}
