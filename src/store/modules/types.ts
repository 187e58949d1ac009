import type { ModuleAddress, ModuleArchiveFormat } from '../../protocol/modules-v1';

/**
 * What is stored about a published module version. The docs are extracted
 * at publish time by the publish script (the Worker parses no HCL); the
 * pages only render them, escaped.
 */

/** One `variable` block. */
export interface ModuleInput {
  name: string;
  /** The type expression as written (`list(string)`), or null when untyped. */
  type: string | null;
  /** The default as HCL-ish JSON text (`"x"`, `[1,2]`, `null`), or null when there is none (then required). */
  default: string | null;
  description: string | null;
  sensitive: boolean;
  nullable: boolean;
  /** True when there is no default: callers must set it. */
  required: boolean;
  /** Number of validation blocks. */
  validations: number;
}

/** One `output` block. */
export interface ModuleOutput {
  name: string;
  description: string | null;
  sensitive: boolean;
}

/** One entry of `terraform { required_providers { … } }`. */
export interface ModuleProviderRequirement {
  /** Local name (`aws`). */
  name: string;
  /** Source address as written (`hashicorp/aws`), or null for the legacy string form. */
  source: string | null;
  /** Version constraint, or null. */
  version: string | null;
}

/** The interface of one module directory (the root or a submodule). */
export interface ModuleInterface {
  inputs: ModuleInput[];
  outputs: ModuleOutput[];
  providers: ModuleProviderRequirement[];
  /** `required_version` constraints, joined with ", " when several blocks set one. */
  requiredVersion: string | null;
}

export interface ModuleSubmodule extends ModuleInterface {
  /** Path inside the package, e.g. "modules/subnet". */
  path: string;
}

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
