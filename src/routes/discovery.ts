
// Built once: discovery never reads KV.
const DISCOVERY = JSON.stringify({ 'providers.v1': '/v1/providers/', 'modules.v1': '/v1/modules/' });

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
