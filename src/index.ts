import { Router, type IRequest } from 'itty-router';
import type { Env } from './env';
import { errorToResponse } from './http/errors';
import { withKvKeyLimits } from './store/key-limits';
import { discovery } from './routes/discovery';
import { findPackage, listVersions } from './routes/registry';
import { mirrorPullDocument } from './routes/mirror-pull/documents';
import { pullReleaseFile } from './routes/mirror-pull/archive';
import { answerHeadLikeGet, withoutBodyForHead, wrongMethod } from './routes/methods';
import { publicRoute, requireModuleReadToken, requireReadToken, requireSignedUrl } from './access/access';
import { moduleArchive } from './routes/modules';
import { proxiedModuleDownload, proxiedModuleVersions } from './routes/module-proxy';
import { modulePage, modulesIndexPage } from './pages/modules';
import { homePage } from './pages/home';
import { mirrorPage, providerPage, signingKeyFile, versionPage } from './pages/providers';
import { docsIndexPage, entityPage } from './pages/docs';
import { loginPage, loginSubmit, logout } from './pages/login';
import { asset, notFoundFor } from './pages/static';
import { pageSession } from './pages/context';
import { redirect } from './pages/respond';
import { countingDownloadDocuments, countingModuleArchives, countingModuleDownloads, countingProviderArchives } from './downloads/routes';
import { requireSignedUrlOrModuleToken } from './access/module-archive-access';
import { mirrorDownloads, moduleDownloads, providerDownloads } from './routes/downloads';
import { moduleLifecycleJson } from './routes/lifecycle';
import { tokenEndpoint } from './access/token-endpoint';
import { sameOriginTokenForm, signedInPerson, tokensPage, tokensSubmit } from './pages/tokens';
import { adminOnly, auditPage } from './pages/audit';
import { asPublisherOf } from './routes/publish/context';
import { createProviderUpload, providerRelease } from './routes/publish/providers';
import { createModuleUpload, moduleRelease } from './routes/publish/modules';
import { changeLifecycle, modulePackage, providerPackage } from './routes/publish/lifecycle';
import { commitUpload, uploadFile, uploadSession } from './routes/publish/uploads';
import { moduleProvenance, provenanceKeys, providerProvenance } from './routes/provenance';
import { ociTokenEndpoint, requireOciPull } from './access/oci';
import { ociBase, ociOther } from './routes/oci/respond';
import { providerBlob, providerManifest, providerReferrers, providerTags } from './routes/oci/providers';
import { moduleBlob, moduleManifest, moduleReferrers, moduleTags } from './routes/oci/modules';

const router = Router<IRequest, [Env, ExecutionContext]>({
  catch: errorToResponse,
  finally: [withoutBodyForHead],
});

// One line a route: method, path, guards, handler (publicRoute: open to anyone, on purpose). `.get` answers HEAD too
// (answerHeadLikeGet below); a path asked with a method it has no line for
// gets 405 with Allow listing the methods it has (wrongMethod).
router
  .get('/.well-known/terraform.json', publicRoute, discovery)
  .get('/v1/providers/:namespace/:type/versions', requireReadToken, listVersions)
  .get('/v1/providers/:namespace/:type/:version/download/:os/:arch', requireReadToken, countingDownloadDocuments(findPackage))
  .get('/v1/mirror/:hostname/:namespace/:type/:file', requireReadToken, mirrorPullDocument)
  .get('/v1/archives/:hostname/:namespace/:type/:version/:file', requireSignedUrl, countingProviderArchives(pullReleaseFile))
  // The publish API (src/routes/publish/): POST a manifest, PUT each file, POST commit. asPublisherOf(target, handler):
  // the handler runs for a caller with publish rights to the target's package (a publish token or a CI ID token).
  .post('/v1/publish/providers/:namespace/:type/:version', asPublisherOf(providerRelease, createProviderUpload))
  .post('/v1/publish/modules/:namespace/:name/:system/:version', asPublisherOf(moduleRelease, createModuleUpload))
  .post('/v1/publish/lifecycle/providers/:namespace/:type', asPublisherOf(providerPackage, changeLifecycle))
  .post('/v1/publish/lifecycle/modules/:namespace/:name/:system', asPublisherOf(modulePackage, changeLifecycle))
  .post('/v1/publish/uploads/:id/commit', asPublisherOf(uploadSession, commitUpload))
  .put('/v1/publish/uploads/:id/:filename', asPublisherOf(uploadSession, uploadFile))
  // modules.v1 (with the module proxy of src/mirror/modules/) and module pages
  .get('/v1/modules/:namespace/:name/:system/versions', requireModuleReadToken, proxiedModuleVersions)
  .get('/v1/modules/:namespace/:name/:system/:version/download', requireModuleReadToken, countingModuleDownloads(proxiedModuleDownload))
  .get('/v1/module-archives/:hostname/:namespace/:name/:system/:version/:file', requireSignedUrlOrModuleToken, countingModuleArchives(moduleArchive))
  // download counts for scripts (src/downloads/)
  .get('/v1/downloads/providers/:namespace/:type', requireReadToken, providerDownloads)
  .get('/v1/downloads/mirror/:hostname/:namespace/:type', requireReadToken, mirrorDownloads)
  .get('/v1/downloads/modules/:namespace/:name/:system', requireModuleReadToken, moduleDownloads)
  // signed provenance of releases (src/routes/provenance.ts)
  .get('/v1/provenance/keys', publicRoute, provenanceKeys)
  .get('/v1/provenance/providers/:namespace/:type/:version', requireReadToken, providerProvenance)
  .get('/v1/provenance/modules/:namespace/:name/:system/:version', requireModuleReadToken, moduleProvenance)
  // a module's deprecations and withdrawals for scripts (modules.v1 has no warnings field)
  .get('/v1/lifecycle/modules/:namespace/:name/:system', requireModuleReadToken, moduleLifecycleJson)
  // The read-only OCI Distribution view (src/routes/oci/, docs/oci.md): providers and modules for oci_mirror and oci:// sources.
  .get('/v2/', requireOciPull, ociBase)
  .get('/v2/token', publicRoute, ociTokenEndpoint)
  .post('/v2/token', publicRoute, ociTokenEndpoint)
  .get('/v2/providers/:hostname/:namespace/:type/tags/list', requireOciPull, providerTags)
  .get('/v2/providers/:hostname/:namespace/:type/manifests/:reference', requireOciPull, providerManifest)
  .get('/v2/providers/:hostname/:namespace/:type/blobs/:digest', requireOciPull, providerBlob)
  .get('/v2/providers/:hostname/:namespace/:type/referrers/:digest', requireOciPull, providerReferrers)
  .get('/v2/modules/:namespace/:name/:system/tags/list', requireOciPull, moduleTags)
  .get('/v2/modules/:namespace/:name/:system/manifests/:reference', requireOciPull, moduleManifest)
  .get('/v2/modules/:namespace/:name/:system/blobs/:digest', requireOciPull, moduleBlob)
  .get('/v2/modules/:namespace/:name/:system/referrers/:digest', requireOciPull, moduleReferrers)
  .all('/v2/*', requireOciPull, ociOther)
  .get('/modules', pageSession, modulesIndexPage)
  .get('/modules/:namespace/:name/:system/:version?', pageSession, modulePage)
  // Pages for people (src/pages/); private mode: a session cookie, else a redirect to /login.
  .get('/', pageSession, homePage)
  .get('/providers/:namespace/:type', pageSession, providerPage)
  .get('/providers/:namespace/:type/:version', pageSession, versionPage)
  .get('/providers/:namespace/:type/:version/signing-key.asc', pageSession, signingKeyFile)
  .get('/providers/:namespace/:type/:version/docs', pageSession, docsIndexPage)
  .get('/providers/:namespace/:type/:version/docs/resources/:name', pageSession, entityPage('resources'))
  .get('/providers/:namespace/:type/:version/docs/data-sources/:name', pageSession, entityPage('data-sources'))
  .get('/mirror/:hostname/:namespace/:type', pageSession, mirrorPage)
  .get('/assets/:file', publicRoute, asset)
  .get('/login', publicRoute, loginPage)
  .post('/login', publicRoute, loginSubmit)
  .post('/logout', publicRoute, logout)
  // Sign-in with the identity provider (src/access/, only with OIDC_ISSUER): login.v1 and the pages' SSO.
  // The broker loads jose and oauth4webapi: imported on first use, so other routes never wait for them.
  .get('/oauth/authorization', publicRoute, async (request, env) => (await import('./pages/sign-in')).authorize(request, env))
  .get('/oauth/callback', publicRoute, async (request, env) => (await import('./pages/sign-in')).callback(request, env))
  .post('/oauth/token', publicRoute, tokenEndpoint)
  .get('/login/sso', publicRoute, async (request, env) => (await import('./pages/sign-in')).pageSignIn(request, env))
  .get('/tokens', signedInPerson, tokensPage)
  .post('/tokens', sameOriginTokenForm, signedInPerson, tokensSubmit)
  .get('/tokens/:action', publicRoute, () => redirect('/tokens'))
  .post('/tokens/:action', sameOriginTokenForm, signedInPerson, tokensSubmit)
  .get('/audit', adminOnly, auditPage)
  .all('*', (request) => wrongMethod(router.routes, request) ?? notFoundFor(request));
answerHeadLikeGet(router.routes);

// Every route sees REGISTRY_KV behind the one KV key-length check (src/store/key-limits.ts): a name whose key
// would pass KV's 512 bytes is refused (404 for a read, 400 for a write) before the binding would throw.
export default {
  fetch: (request: Request, env: Env, ctx: ExecutionContext) => router.fetch(request, withKvKeyLimits(env), ctx),
} satisfies ExportedHandler<Env>;

// Durable Object classes (wrangler.toml [[durable_objects.bindings]]).
export { DownloadCounter } from './downloads/counter';
