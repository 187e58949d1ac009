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
  const { namespace, name, system } = p.address;
  const label = `${namespace}/${name}/${system} ${p.version}`;
  const result = await sendModule(client, p);
  log(
    {
      'dry-run': `dry run: the registry accepts ${label}; nothing was written`,
      unchanged: `${label} is already published with this package; nothing to upload`,
      repaired: `${label} is already published with this package; nothing to upload`,
      published: `published ${label}`,
    }[result.status],
  );
  return result;
}

/**
 * Publishes the package through `client` (every way in: --registry, and the local publish): the
 * manifest (format, size, digest, docs as data, README as text), then the package's upload and the
 * commit unless the server answers at once (dry run, unchanged, repaired). Resolves with the status;
 * throws the client's errors.
 */
export async function sendModule(client: RegistryClient, p: Omit<RegistryModulePublish, 'registry'>): Promise<ModulePublishResult> {
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
  const started = await client.start<ModulePublishResult>(`/v1/publish/modules/${namespace}/${name}/${system}/${p.version}`, manifest);
  if ('result' in started) return started.result;
  const filename = started.session.files[0]?.filename;
  if (!filename) throw new Error('the registry asked for no package file');
  return client.uploadAndCommit<ModulePublishResult>(started.session, [{ filename, size: p.bytes.byteLength, bytes: p.bytes }]);
}

/** The hostname a --registry URL names (module addresses are HOST/NS/NAME/SYSTEM). */
export function registryHostname(url: string): string {
  try {
    return new URL(url).host.toLowerCase();
  } catch {
    throw new InputError(`--registry "${url}" is not a URL; give the registry's base URL, e.g. https://registry.acme.com`);
  }
}
