/**
 * The stored form of a provider version's documentation: one normalised
 * schema, whichever format the publisher supplied (a Provider Code
 * Specification or `terraform providers schema -json`; see
 * scripts/lib/provider/docs/). The docs pages render this and nothing else.
 */

/** How an attribute is set: by the user (required/optional), by the provider (computed), or either. */
export type AttributeMode = 'required' | 'optional' | 'computed' | 'computed_optional';

export interface DocAttribute {
  name: string;
  /** Terraform type expression: "string", "list(string)", "object({a = number})", "list of nested objects", … */
  type: string;
  mode: AttributeMode;
  sensitive?: boolean;
  deprecation?: string;
  description?: string;
  /** Nested attributes (list_nested, set_nested, map_nested, single_nested). */
  nested?: { nesting: 'single' | 'list' | 'set' | 'map'; attributes: DocAttribute[] };
}

export interface DocBlock {
  name: string;
  nesting: 'single' | 'list' | 'set' | 'map' | 'group';
  description?: string;
  deprecation?: string;
  minItems?: number;
  maxItems?: number;
  attributes: DocAttribute[];
  blocks: DocBlock[];
}

export interface DocSchema {
  description?: string;
  deprecation?: string;
  attributes: DocAttribute[];
  blocks: DocBlock[];
}

/** A resource or data source: its full type name (PROVIDER_NAME) and schema. */
export interface DocEntity {
  name: string;
  schema: DocSchema;
}

export interface ProviderDocs {
  /** Which format it was published from. */
  source: 'provider-code-spec' | 'terraform-schema';
  /** The provider's local name (its type). */
  provider: string;
  providerSchema: DocSchema;
  resources: DocEntity[];
  dataSources: DocEntity[];
}
