import { discoveryBody, PROVIDERS_V1_PATH } from '../protocol/discovery';
import { MODULES_V1_PATH } from '../protocol/modules-v1';
import type { IRequest } from 'itty-router';
import { settings } from '../config';
import type { Env } from '../env';
import { loginV1Service } from '../access/login-v1';

// Built once: discovery never reads KV.
const DISCOVERY = discoveryBody({ 'providers.v1': PROVIDERS_V1_PATH, 'modules.v1': MODULES_V1_PATH });
// With sign-in configured (OIDC_ISSUER), login.v1 too: `terraform login HOST` / `tofu login HOST`.
const DISCOVERY_WITH_LOGIN = discoveryBody({ 'providers.v1': PROVIDERS_V1_PATH, 'modules.v1': MODULES_V1_PATH, 'login.v1': loginV1Service() });

/**
 * GET /.well-known/terraform.json — remote service discovery. Always 200 with
 * the providers.v1 and modules.v1 base URLs (and login.v1 when sign-in is configured) (path-absolute; the client
 * resolves them against this document's URL).
 */
export function discovery(_request: IRequest, env: Env): Response {
  return new Response(settings(env).oidc ? DISCOVERY_WITH_LOGIN : DISCOVERY, {
    headers: { 'content-type': 'application/json', 'cache-control': 'public, max-age=3600' },
  });
}
