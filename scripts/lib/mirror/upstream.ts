import { discoverProviders as discover } from '../../../src/mirror/upstream';
import { UpstreamError, type UpstreamHttp } from './upstream-http';

/**
 * The providers.v1 protocol as a client (Terraform's installer): service
 * discovery, list versions, find a package. The client itself is shared with
 * the Worker's pull-through (src/mirror/upstream.ts); this adds what only the
 * CLI has: `host` blocks of the Terraform CLI configuration, checked here.
 * (List versions and find a package: import them from src/mirror/upstream.ts.)
 */

/**
 * Discovers the providers.v1 base URL of `hostname` (absolute, ends with "/"),
 * or takes `override` (a CLI configuration `host` block) without asking.
 * 404 or no providers.v1 → UpstreamError.
 */
export async function discoverProviders(http: UpstreamHttp, hostname: string, override?: string): Promise<string> {
  if (override !== undefined) {
    try {
      const url = new URL(override);
      if (!url.pathname.endsWith('/')) url.pathname += '/';
      return url.toString();
    } catch {
      throw new UpstreamError(`host "${hostname}" in the Terraform CLI configuration: "providers.v1" = ${JSON.stringify(override)} is not an absolute URL`);
    }
  }
  return discover(http, hostname);
}
