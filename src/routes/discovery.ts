import { discoveryBody, PROVIDERS_V1_PATH } from '../protocol/discovery';

// Built once: discovery never reads KV.
const DISCOVERY = discoveryBody({ 'providers.v1': PROVIDERS_V1_PATH });

/**
 * GET /.well-known/terraform.json — remote service discovery. Always 200 with
 * the providers.v1 base URL (path-absolute; the client resolves it against this
 * document's URL). Other services (modules.v1) are added to the object above.
 */
export function discovery(): Response {
  return new Response(DISCOVERY, {
    headers: { 'content-type': 'application/json', 'cache-control': 'public, max-age=3600' },
  });
}
