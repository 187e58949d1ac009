import { InputError } from '../../../src/protocol/errors';
import type { ModuleAddress, ModuleArchiveFormat } from '../../../src/protocol/modules-v1';
import type { ModuleManifestBody, ModulePublishResult } from '../../../src/protocol/publish-api';
import type { ModuleDocs } from '../../../src/store/modules/types';
import { RegistryClient } from '../registry-api';

/**
 * `publish-module … --registry URL`: publishes a validated (and, for a
 * directory, deterministically packed) module package through the
 * registry's publish API. The docs extracted here travel as data; the README
 * travels as text, which the registry shows as preformatted text (it never
 * takes HTML from a publisher). The server checks the package again before
 * it commits; `dryRun` asks it to validate and write nothing.
 */

export interface RegistryModulePublish {
  registry: string;
  address: ModuleAddress;
  version: string;
  format: ModuleArchiveFormat;
  bytes: Uint8Array;
  sha256: string;
  docs: ModuleDocs;
  readme: string | null;
  dryRun?: boolean;
}

export async function publishModuleToRegistry(p: RegistryModulePublish, log: (line: string) => void, env: NodeJS.ProcessEnv): Promise<ModulePublishResult> {
  const client = await RegistryClient.open(p.registry, env, log);
  const { readmeHtml: _html, ...docs } = p.docs;
  void _html;
  const manifest: ModuleManifestBody = {
    format: p.format,
    size: p.bytes.byteLength,
    sha256: p.sha256,
    docs,
    readme: p.readme,
    ...(p.dryRun ? { dry_run: true } : {}),
  };
  const { namespace, name, system } = p.address;
  const label = `${namespace}/${name}/${system} ${p.version}`;
  const started = await client.start<ModulePublishResult>(`/v1/publish/modules/${namespace}/${name}/${system}/${p.version}`, manifest);
  if ('result' in started) {
    log(
      started.result.status === 'dry-run'
        ? `dry run: the registry accepts ${label}; nothing was written`
        : `${label} is already published with this package; nothing to upload`,
    );
    return started.result;
  }
  const filename = started.session.files[0]?.filename;
  if (!filename) throw new Error('the registry asked for no package file');
  const result = await client.uploadAndCommit<ModulePublishResult>(started.session, [{ filename, size: p.bytes.byteLength, bytes: p.bytes }]);
  log(result.status === 'published' ? `published ${label}` : `${label} was already published; nothing rewritten`);
  return result;
}

/** The hostname a --registry URL names (module addresses are HOST/NS/NAME/SYSTEM). */
export function registryHostname(url: string): string {
  try {
    return new URL(url).host.toLowerCase();
  } catch {
    throw new InputError(`--registry "${url}" is not a URL; give the registry's base URL, e.g. https://registry.acme.com`);
  }
}
