import { discoveryBody, PROVIDERS_V1_PATH, type ServiceDiscovery } from '../protocol/discovery';
import { MODULES_V1_PATH } from '../protocol/modules-v1';
import type { IRequest } from 'itty-router';
import { settings } from '../config';
import type { Env } from '../env';
import { loginV1Service } from '../access/login-v1';
import { staticProvidersBase } from '../store/static-documents';
import { servedPublicDocuments } from '../access/release-urls';
import { documentResponse } from '../http/responses';
import { StoredDocument } from '../store/stored-body';

// Built once (and compressed once, as a kept document): discovery reads KV only for PUBLIC_DOCUMENTS=r2's marker (once per isolate).
const DISCOVERY = new StoredDocument(discoveryBody({ 'providers.v1': PROVIDERS_V1_PATH, 'modules.v1': MODULES_V1_PATH }));
// With sign-in configured (OIDC_ISSUER), login.v1 too: `terraform login HOST` / `tofu login HOST`.
const DISCOVERY_WITH_LOGIN = new StoredDocument(
  discoveryBody({ 'providers.v1': PROVIDERS_V1_PATH, 'modules.v1': MODULES_V1_PATH, 'login.v1': loginV1Service() }),
);
// PUBLIC_DOCUMENTS=r2: the document per Env object (the runtime hands an isolate's requests the same one).
const withStaticProviders = new WeakMap<Env, StoredDocument>();

/**
 * GET /.well-known/terraform.json — remote service discovery. Always 200 with
 * the providers.v1 and modules.v1 base URLs (and login.v1 when sign-in is configured), path-absolute: the client
 * resolves them against this document's URL. With PUBLIC_DOCUMENTS=r2 (public mode), once `npm run
 * static-documents` checked the files origin (servedPublicDocuments: one KV read per isolate, none per request
 * once known), providers.v1 is the absolute URL of the static documents there (FILES_ORIGIN/v1/providers/HOST/),
 * so a provider install never reaches the Worker; before that, and for modules.v1 always, the Worker's. 503 naming
 * the setting while PUBLIC_DOCUMENTS is broken in public mode. With GZIP_DOCUMENTS, sent to a gzip client
 * compressed once per isolate (documentResponse).
 */
export async function discovery(request: IRequest, env: Env): Promise<Response> {
  const config = settings(env);
  let document = config.oidc ? DISCOVERY_WITH_LOGIN : DISCOVERY;
  const documents = await servedPublicDocuments(env);
  if (documents) {
    let kept = withStaticProviders.get(env);
    if (!kept) {
      const services: ServiceDiscovery = { 'providers.v1': staticProvidersBase(documents, config.hostname), 'modules.v1': MODULES_V1_PATH };
      if (config.oidc) services['login.v1'] = loginV1Service();
      kept = new StoredDocument(discoveryBody(services));
      withStaticProviders.set(env, kept);
    }
    document = kept;
  }
  return documentResponse(request, document, 'public, max-age=3600', { compress: config.gzipDocuments });
}
