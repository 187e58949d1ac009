/**
 * Bench-only Worker (never deployed) for bench/identity.ts: runs the
 * trusted-publishing code paths the publish API runs, N times per request,
 * so the bench can read workerd's CPU per operation from /proc:
 *
 *   POST /__sign?ns=NS&n=N      N × signShasumsWithHeldKey (held key of NS, secret in X-Secret)
 *   POST /__verify?n=N          N × verifyCiToken of the token in the body against the
 *                               publishers in X-Publishers (JSON), aud registry.example.com
 */
import { verifyCiToken } from '../src/access/ci-token';
import type { TrustedPublisher } from '../src/access/publishers';
import { signShasumsWithHeldKey } from '../src/store/keys/held-keys';
import type { Env } from '../src/env';

const SUMS = new TextEncoder().encode(`${'c'.repeat(64)}  terraform-provider-bench_1.0.0_linux_amd64.zip\n`.repeat(3));

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url);
    const n = Number(url.searchParams.get('n') ?? '1');
    if (url.pathname === '/__sign') {
      let keyId = '';
      for (let i = 0; i < n; i++) {
        const signed = await signShasumsWithHeldKey(
          { kv: env.REGISTRY_KV },
          { signingKeySecret: request.headers.get('x-secret') ?? '' },
          'registry.example.com',
          url.searchParams.get('ns')!,
          SUMS,
        );
        keyId = signed?.keyId ?? 'none';
      }
      return new Response(keyId);
    }
    if (url.pathname === '/__verify') {
      const token = await request.text();
      const publishers = JSON.parse(request.headers.get('x-publishers') ?? '[]') as TrustedPublisher[];
      let subject = '';
      for (let i = 0; i < n; i++)
        subject = (
          await verifyCiToken(token, {
            namespace: 'acme',
            pkg: { kind: 'provider', namespace: 'acme', type: 'thing' },
            publishers,
            hostname: 'registry.example.com',
          })
        ).actor.subject;
      return new Response(subject);
    }
    return new Response('not found', { status: 404 });
  },
};

// wrangler.toml binds the DOWNLOADS Durable Object: a Worker built with it must export the class.
export { DownloadCounter } from '../src/downloads/counter';
