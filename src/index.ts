import { Router, type IRequest } from 'itty-router';
import type { Env } from './env';
import { errorToResponse, notFound } from './http';
import { discovery } from './routes/discovery';
import { findPackage, listVersions } from './routes/registry';
import { mirrorDocument } from './routes/mirror';
import { releaseFile } from './routes/archives';
import { onlyGetAndHead, withoutBodyForHead } from './routes/methods';
import { requireAnyReadToken, requireModuleReadToken, requireReadToken, requireSignedUrl } from './auth/access';
import { listModuleVersions, moduleArchive, moduleDownload } from './routes/modules';
import { modulePage, modulesIndexPage } from './pages/modules';

const router = Router<IRequest, [Env, ExecutionContext]>({
  before: [onlyGetAndHead],
  catch: errorToResponse,
  finally: [withoutBodyForHead],
});

router
  .all('/.well-known/terraform.json', discovery)
  .all('/v1/providers/:namespace/:type/versions', requireReadToken, listVersions)
  .all('/v1/providers/:namespace/:type/:version/download/:os/:arch', requireReadToken, findPackage)
  .all('/v1/mirror/:hostname/:namespace/:type/:file', requireReadToken, mirrorDocument)
  .all('/v1/archives/:hostname/:namespace/:type/:version/:file', requireSignedUrl, releaseFile)
  // modules.v1 and module pages
  .all('/v1/modules/:namespace/:name/:system/versions', requireModuleReadToken, listModuleVersions)
  .all('/v1/modules/:namespace/:name/:system/:version/download', requireModuleReadToken, moduleDownload)
  .all('/v1/module-archives/:hostname/:namespace/:name/:system/:version/:file', requireSignedUrl, moduleArchive)
  .all('/modules', requireAnyReadToken, modulesIndexPage)
  .all('/modules/:namespace/:name/:system/:version?', requireModuleReadToken, modulePage)
  .all('*', () => notFound());

export default { fetch: router.fetch } satisfies ExportedHandler<Env>;
