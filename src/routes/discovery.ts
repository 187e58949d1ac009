
// Built once: discovery never reads KV.
const DISCOVERY = JSON.stringify({ 'providers.v1': '/v1/providers/' });

/**
 * GET /.well-known/terraform.json — remote service discovery. Always 200 with
 * the providers.v1 base URL (path-absolute; the client resolves it against this
 * document's URL). Other services (modules.v1) can be added as keys here.
 */
export function discovery(): Response {
  return new Response(DISCOVERY, {
    headers: { 'content-type': 'application/json', 'cache-control': 'public, max-age=3600' },
  });
}
