import { discoveryBody, PROVIDERS_V1_PATH } from '../protocol/discovery';
import { MODULES_V1_PATH } from '../protocol/modules-v1';

// Built once: discovery never reads KV.
const DISCOVERY = discoveryBody({ 'providers.v1': PROVIDERS_V1_PATH, 'modules.v1': MODULES_V1_PATH });

/**
 * GET /.well-known/terraform.json — remote service discovery. Always 200 with
 * the providers.v1 and modules.v1 base URLs (path-absolute; the client
 * resolves them against this document's URL).
 */
export function discovery(): Response {
  return new Response(DISCOVERY, {
    headers: { 'content-type': 'application/json', 'cache-control': 'public, max-age=3600' },
  });
}
