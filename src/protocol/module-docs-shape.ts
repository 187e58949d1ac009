/**
 * A module directory's interface as the publish API carries it and the store
 * keeps it (src/store/modules/types.ts ModuleDocs adds the rendered README).
 * Extracted by the publishing client (the Worker parses no HCL); the pages
 * only render it, escaped.
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
