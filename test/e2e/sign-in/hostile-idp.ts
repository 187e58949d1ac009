import { createServer, type Server } from 'node:http';
import { exportJWK, exportSPKI, generateKeyPair, SignJWT, type JWTPayload } from 'jose';

/**
 * A misbehaving identity provider for the hostile tests: real discovery,
 * JWKS and code flow endpoints over HTTP on 127.0.0.1, whose token endpoint
 * answers with an ID token broken in the way `mode` says (wrong aud or iss,
 * expired, issued in the future, alg none, HS256 keyed with its own public
 * key, an unknown kid, a tampered payload), or garbage. `oidc-provider`
 * cannot be made to do any of that, which is the point of this one; the
 * well-behaved flows use oidc-provider (harness.ts).
 */
export type HostileMode =
  | 'good'
  | 'wrong-aud'
  | 'wrong-iss'
  | 'expired'
  | 'future-iat'
  | 'alg-none'
  | 'hs256-public-key'
  | 'unknown-kid'
  | 'tampered'
  | 'wrong-nonce'
  | 'token-garbage'
  | 'token-error'
  | 'discovery-garbage'
  | 'discovery-500';

export interface HostileIdp {
  issuer: string;
  mode: HostileMode;
  /** Every ID token it handed out (to check none is ever logged). */
  issued: string[];
  stop(): Promise<void>;
}

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

export async function startHostileIdp(port: number, clientId: string): Promise<HostileIdp> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid: 'hostile-1', alg: 'RS256', use: 'sig' };
  const issuer = `http://127.0.0.1:${port}`;
  const nonces = new Map<string, string>();
  const idp: HostileIdp = { issuer, mode: 'good', issued: [], stop: async () => {} };

  async function idToken(nonce: string): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    const claims: JWTPayload = {
      iss: issuer,
      aud: clientId,
      sub: 'mallory',
      nonce,
      iat: now,
      exp: now + 300,
      email: 'mallory@acme.com',
      email_verified: true,
      groups: ['platform'],
    };
    const sign = (payload: JWTPayload, kid = 'hostile-1') => new SignJWT(payload).setProtectedHeader({ alg: 'RS256', kid }).sign(privateKey);
    switch (idp.mode) {
      case 'wrong-aud':
        return sign({ ...claims, aud: 'another-client' });
      case 'wrong-iss':
        return sign({ ...claims, iss: 'http://127.0.0.1:1' });
      case 'expired':
        return sign({ ...claims, iat: now - 3600, exp: now - 1800 });
      case 'future-iat':
        return sign({ ...claims, iat: now + 3600, exp: now + 7200 });
      case 'wrong-nonce':
        return sign({ ...claims, nonce: 'not-the-nonce' });
      case 'unknown-kid':
        return sign(claims, 'hostile-2');
      case 'alg-none':
        return `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.`;
      case 'hs256-public-key': {
        const secret = new TextEncoder().encode(await exportSPKI(publicKey));
        return new SignJWT(claims).setProtectedHeader({ alg: 'HS256', kid: 'hostile-1' }).sign(secret);
      }
      case 'tampered': {
        const [header, , signature] = (await sign({ ...claims, groups: [] })).split('.');
        return `${header}.${b64({ ...claims, groups: ['platform', 'registry-admins'] })}.${signature}`;
      }
      default:
        return sign(claims);
    }
  }

  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', issuer);
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (url.pathname === '/.well-known/openid-configuration') {
      if (idp.mode === 'discovery-garbage') {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end('<html>maintenance</html>');
        return;
      }
      if (idp.mode === 'discovery-500') {
        res.writeHead(500);
        res.end();
        return;
      }
      json(200, {
        issuer,
        authorization_endpoint: `${issuer}/auth`,
        token_endpoint: `${issuer}/token`,
        jwks_uri: `${issuer}/jwks`,
        response_types_supported: ['code'],
        subject_types_supported: ['public'],
        id_token_signing_alg_values_supported: ['RS256'],
        token_endpoint_auth_methods_supported: ['client_secret_basic', 'none'],
        code_challenge_methods_supported: ['S256'],
      });
      return;
    }
    if (url.pathname === '/jwks') {
      json(200, { keys: [jwk] });
      return;
    }
    if (url.pathname === '/auth') {
      const code = `hostile-code-${Math.random().toString(36).slice(2)}`;
      nonces.set(code, url.searchParams.get('nonce') ?? '');
      const back = new URL(url.searchParams.get('redirect_uri')!);
      back.searchParams.set('code', code);
      back.searchParams.set('state', url.searchParams.get('state') ?? '');
      res.writeHead(302, { location: back.toString() });
      res.end();
      return;
    }
    if (url.pathname === '/token' && req.method === 'POST') {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        const code = new URLSearchParams(body).get('code') ?? '';
        if (idp.mode === 'token-garbage') {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('{"access_token": [unterminated');
          return;
        }
        if (idp.mode === 'token-error') {
          json(400, { error: 'invalid_grant', error_description: 'no' });
          return;
        }
        void idToken(nonces.get(code) ?? '').then((token) => {
          idp.issued.push(token);
          json(200, { access_token: 'hostile-access-token', token_type: 'Bearer', expires_in: 300, id_token: token });
        });
      });
      return;
    }
    res.writeHead(404);
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
  idp.stop = () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return idp;
}
