import { parseArgs } from 'node:util';
import { startIdp } from './lib/identity/idp';

/**
 * `npm run idp`: a local OpenID Provider (oidc-provider) to try sign-in with
 * `npm start` / `wrangler dev` and `terraform login` — never for production.
 * Accounts: alice (group platform, alice@acme.com), bob (bob@example.org, no
 * group), carol (group registry-admins, carol@acme.com); any password.
 */
const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '9000' },
    registry: { type: 'string', default: 'https://localhost:8787' },
    'client-id': { type: 'string', default: 'edge-registry' },
    'client-secret': { type: 'string' },
  },
});
const registry = values.registry.replace(/\/+$/, '');
const idp = await startIdp({
  port: Number(values.port),
  clientId: values['client-id'],
  clientSecret: values['client-secret'],
  redirectUris: [`${registry}/oauth/callback`],
  accounts: [
    { login: 'alice', email: 'alice@acme.com', email_verified: true, groups: ['platform'], name: 'Alice' },
    { login: 'bob', email: 'bob@example.org', email_verified: true, groups: [], name: 'Bob' },
    { login: 'carol', email: 'carol@acme.com', email_verified: true, groups: ['registry-admins'], name: 'Carol' },
  ],
});
console.log(`local identity provider: ${idp.issuer} (client ${values['client-id']}, callback ${registry}/oauth/callback)`);
console.log('accounts: alice (group platform), bob (no group), carol (group registry-admins); any password. Ctrl-C stops it.');
process.on('SIGINT', () => void idp.stop().then(() => process.exit(0)));
