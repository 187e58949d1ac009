import { Router, type IRequest } from 'itty-router';
import type { Env } from './env';
import { errorToResponse } from './http/errors';
import { discovery } from './routes/discovery';
import { findPackage, listVersions } from './routes/registry';
import { mirrorPullDocument } from './routes/mirror-pull/documents';
import { pullReleaseFile } from './routes/mirror-pull/archive';
import { onlyGetAndHead, withoutBodyForHead } from './routes/methods';
import { requireModuleReadToken, requireReadToken, requireSignedUrl } from './auth/access';
import { moduleArchive } from './routes/modules';
import { proxiedModuleDownload, proxiedModuleVersions } from './routes/module-proxy';
import { modulePage, modulesIndexPage } from './pages/modules';
import { homePage } from './pages/home';
import { mirrorPage, providerPage, signingKeyFile, versionPage } from './pages/providers';
import { docsIndexPage, entityPage } from './pages/docs';
import { loginPage, loginSubmit, logout } from './pages/login';
import { asset, notFoundFor } from './pages/static';
import { countingModuleArchives, countingProviderArchives } from './downloads/routes';
import { requireSignedUrlOrModuleToken } from './auth/module-archive-access';
import { mirrorDownloads, moduleDownloads, providerDownloads } from './routes/downloads';
import { moduleLifecycleJson } from './routes/lifecycle';
import { tokenEndpoint } from './identity/token-endpoint';
import { tokensPage, tokensSubmit } from './pages/tokens';
import { auditPage } from './pages/audit';
import { createProviderUpload } from './routes/publish/providers';
import { createModuleUpload } from './routes/publish/modules';
import { moduleLifecycle, providerLifecycle } from './routes/publish/lifecycle';
import { commitUpload, uploadFile } from './routes/publish/uploads';
import { moduleProvenance, provenanceKeys, providerProvenance } from './routes/provenance';

const router = Router<IRequest, [Env, ExecutionContext]>({
  before: [onlyGetAndHead],
  catch: errorToResponse,
  finally: [withoutBodyForHead],
});

router
  .all('/.well-known/terraform.json', discovery)
  .all('/v1/providers/:namespace/:type/versions', requireReadToken, listVersions)
  .all('/v1/providers/:namespace/:type/:version/download/:os/:arch', requireReadToken, findPackage)
  .all('/v1/mirror/:hostname/:namespace/:type/:file', requireReadToken, mirrorPullDocument)
  .all('/v1/archives/:hostname/:namespace/:type/:version/:file', requireSignedUrl, countingProviderArchives(pullReleaseFile))
  // The publish API (src/routes/publish/): POST a manifest, PUT each file, POST commit.
  .all('/v1/publish/providers/:namespace/:type/:version', createProviderUpload)
  .all('/v1/publish/modules/:namespace/:name/:system/:version', createModuleUpload)
  .all('/v1/publish/lifecycle/providers/:namespace/:type', providerLifecycle)
  .all('/v1/publish/lifecycle/modules/:namespace/:name/:system', moduleLifecycle)
  .all('/v1/publish/uploads/:id/commit', commitUpload)
  .all('/v1/publish/uploads/:id/:filename', uploadFile)
  // modules.v1 (with the module proxy of src/mirror/modules/) and module pages
  .all('/v1/modules/:namespace/:name/:system/versions', requireModuleReadToken, proxiedModuleVersions)
  .all('/v1/modules/:namespace/:name/:system/:version/download', requireModuleReadToken, proxiedModuleDownload)
  .all('/v1/module-archives/:hostname/:namespace/:name/:system/:version/:file', requireSignedUrlOrModuleToken, countingModuleArchives(moduleArchive))
  // download counts for scripts (src/downloads/)
  .all('/v1/downloads/providers/:namespace/:type', requireReadToken, providerDownloads)
  .all('/v1/downloads/mirror/:hostname/:namespace/:type', requireReadToken, mirrorDownloads)
  .all('/v1/downloads/modules/:namespace/:name/:system', requireModuleReadToken, moduleDownloads)
  // signed provenance of releases (src/routes/provenance.ts)
  .all('/v1/provenance/keys', provenanceKeys)
  .all('/v1/provenance/providers/:namespace/:type/:version', requireReadToken, providerProvenance)
  .all('/v1/provenance/modules/:namespace/:name/:system/:version', requireModuleReadToken, moduleProvenance)
  // a module's deprecations and withdrawals for scripts (modules.v1 has no warnings field)
  .all('/v1/lifecycle/modules/:namespace/:name/:system', requireModuleReadToken, moduleLifecycleJson)
  .all('/modules', modulesIndexPage)
  .all('/modules/:namespace/:name/:system/:version?', modulePage)
  // Pages for people (src/pages/); private mode: a session cookie, else a redirect to /login.
  .all('/', homePage)
  .all('/providers/:namespace/:type', providerPage)
  .all('/providers/:namespace/:type/:version', versionPage)
  .all('/providers/:namespace/:type/:version/signing-key.asc', signingKeyFile)
  .all('/providers/:namespace/:type/:version/docs', docsIndexPage)
  .all('/providers/:namespace/:type/:version/docs/resources/:name', entityPage('resources'))
  .all('/providers/:namespace/:type/:version/docs/data-sources/:name', entityPage('data-sources'))
  .all('/mirror/:hostname/:namespace/:type', mirrorPage)
  .all('/assets/:file', asset)
  .all('/login', (request, env) => (request.method === 'POST' ? loginSubmit(request, env) : loginPage(request, env)))
  .all('/logout', logout)
  // Sign-in with the identity provider (src/identity/, only with OIDC_ISSUER): login.v1 and the pages' SSO.
  // The broker loads jose and oauth4webapi: imported on first use, so other routes never wait for them.
  .all('/oauth/authorization', async (request, env) => (await import('./identity/broker')).authorize(request, env))
  .all('/oauth/callback', async (request, env) => (await import('./identity/broker')).callback(request, env))
  .all('/oauth/token', tokenEndpoint)
  .all('/login/sso', async (request, env) => (await import('./identity/broker')).pageSignIn(request, env))
  .all('/tokens', (request, env) => (request.method === 'POST' ? tokensSubmit(request, env) : tokensPage(request, env)))
  .all('/tokens/:action', tokensSubmit)
  .all('/audit', auditPage)
  .all('*', notFoundFor);

export default { fetch: router.fetch } satisfies ExportedHandler<Env>;

// Durable Object classes (wrangler.toml [[durable_objects.bindings]]).
export { DownloadCounter } from './downloads/counter';
