import type { IRequest } from 'itty-router';
import { isPrivate } from '../config';
import type { Env } from '../env';
import { parseModuleName } from '../protocol/modules-v1';
import { checkReadToken, requireSignedUrl } from './access';

/**
 * Guard of the module-archive route. Public mode: nothing to check. Private
 * mode, two ways in:
 *   - a signed URL (`?expires=…&signature=…`), what the 204 + X-Terraform-Get
 *     answer hands Terraform and older OpenTofu, whose go-getter sends no
 *     credentials — checked exactly like release files (403 when invalid);
 *   - no signature but `Authorization: Bearer <read token>`: what OpenTofu
 *     1.12+ sends after the JSON answer `{"location", "use_registry_credentials":
 *     true}` (src/routes/module-download-form.ts) — checked exactly like the
 *     modules.v1 API (401 for a bad token, 403 for a namespace outside its scopes).
 * Otherwise undefined and the route answers.
 */
export function requireSignedUrlOrModuleToken(request: IRequest, env: Env): Promise<Response | undefined> | undefined {
  if (!isPrivate(env)) return undefined;
  const url = new URL(request.url);
  const signed = url.searchParams.has('signature') || url.searchParams.has('expires');
  if (!signed && /^bearer\s/i.test(request.headers.get('authorization') ?? '')) {
    return checkReadToken(request, env, (raw) => parseModuleName(raw, 'namespace'));
  }
  return requireSignedUrl(request, env);
}
