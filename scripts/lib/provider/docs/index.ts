import { readFileSync } from 'node:fs';
import { InputError } from '../../../../src/protocol/errors';
import type { ProviderDocs } from '../../../../src/protocol/provider-docs-shape';
import { fromCodeSpec, isCodeSpec } from './code-spec';
import { fromTerraformSchema, isTerraformSchema } from './terraform-schema';

/**
 * `--docs FILE` of publish-provider: reads a Provider Code Specification or
 * the output of `terraform providers schema -json` (told apart by their
 * top-level keys) and returns the stored docs form. Throws InputError when
 * the file cannot be read, is not JSON, is neither format, or fails
 * validation (every problem with its JSON path and the fix).
 */
export function readDocsFile(file: string, namespace: string, providerType: string): ProviderDocs {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new InputError(`docs ${file}: cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  return parseDocs(text, file, namespace, providerType);
}

/** parseDocs: readDocsFile on text already read. */
export function parseDocs(text: string, file: string, namespace: string, providerType: string): ProviderDocs {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new InputError(`docs ${file}: not valid JSON (${(error as Error).message})`);
  }
  if (isTerraformSchema(value)) return fromTerraformSchema(value, file, namespace, providerType);
  if (isCodeSpec(value)) return fromCodeSpec(value, file, providerType);
  throw new InputError(
    `docs ${file}: neither a Provider Code Specification (top-level "version", "provider", "resources", "datasources") nor the output of terraform providers schema -json (top-level "provider_schemas")`,
  );
}
