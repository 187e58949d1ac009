import type { ModuleInterface, ModuleSubmodule } from '../../protocol/module-docs-shape';
import type { ModuleAddress, ModuleArchiveFormat } from '../../protocol/modules-v1';

/**
 * What is stored about a published module version. The docs are extracted
 * at publish time by the publish script (the Worker parses no HCL); the
 * pages only render them, escaped.
 */

export type { ModuleInput, ModuleInterface, ModuleOutput, ModuleProviderRequirement, ModuleSubmodule } from '../../protocol/module-docs-shape';

/** Everything a module page shows for one version. */
export interface ModuleDocs extends ModuleInterface {
  submodules: ModuleSubmodule[];
  /** README.md rendered to sanitised HTML at publish time, or null when there is none. */
  readmeHtml: string | null;
}

/** The stored record of a module version: the package's identity (immutability is checked against it). */
export interface ModuleVersionRecord {
  address: ModuleAddress;
  version: string;
  filename: string;
  format: ModuleArchiveFormat;
  /** Hex SHA-256 of the package. */
  sha256: string;
  size: number;
  publishedAt: string;
  /** The signed statement of this version (src/store/provenance.ts); absent for versions published without one. */
  provenance?: import('../provenance').ProvenanceRef;
  /** Set by the module proxy: the upstream module (HOST/NS/NAME/SYSTEM) this version was fetched from; absent for versions published here. */
  proxiedFrom?: string;
}

/** The module catalog of a hostname (the /modules page), rebuilt from the records at every publish. */
export interface ModuleCatalog {
  modules: { namespace: string; name: string; system: string; versions: string[] }[];
}
