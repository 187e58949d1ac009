import { exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';

describe('GET /.well-known/terraform.json', () => {
  // The first request of this file loads the Worker's whole module graph in workerd: seconds on a loaded 2-core machine.
  it('advertises providers.v1 as a URL the client resolves against the document', async () => {
    const response = await exports.default.fetch('https://registry.example.com/.well-known/terraform.json');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json');
    const body = await response.json<Record<string, string>>();
    expect(body).toEqual({ 'providers.v1': '/v1/providers/', 'modules.v1': '/v1/modules/' });
    expect(new URL(body['providers.v1']!, response.url || 'https://registry.example.com/.well-known/terraform.json').href).toBe(
      'https://registry.example.com/v1/providers/',
    );
    // Without OIDC_ISSUER (wrangler.toml sets none): no login.v1.
    expect(body['login.v1']).toBeUndefined();
  }, 30_000);
});
