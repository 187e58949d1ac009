import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseDocs, readDocsFile } from '../../../scripts/lib/provider/docs/index';
import { demoCodeSpec } from '../../../scripts/lib/demo/provider-docs';
import { generateSigningKey } from '../../../scripts/lib/keys/keyring';
import { fingerprintOf } from '../../../src/protocol/openpgp-packets';
import { InputError } from '../../../src/protocol/errors';

// --docs FILE: both formats read into one form; every problem named by its JSON path with the fix.
const errorOf = (fn: () => unknown): string => {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(InputError);
    return (error as Error).message;
  }
  throw new Error('expected an InputError');
};

const spec = (patch: (s: any) => void = () => {}) => {
  const s = JSON.parse(JSON.stringify(demoCodeSpec('1.0.0')));
  patch(s);
  return JSON.stringify(s);
};

describe('Provider Code Specification', () => {
  it('reads the demo spec: full type names, types, modes, sensitive, deprecation, nested attributes and blocks', () => {
    const docs = parseDocs(spec(), 'spec.json', 'demo', 'example');
    expect(docs.source).toBe('provider-code-spec');
    expect(docs.resources.map((r) => r.name)).toEqual(['example_network', 'example_server']);
    expect(docs.dataSources.map((r) => r.name)).toEqual(['example_image']);
    const server = docs.resources.find((r) => r.name === 'example_server')!.schema;
    const attr = (name: string) => server.attributes.find((a) => a.name === name)!;
    expect(attr('tags')).toMatchObject({ type: 'map(string)', mode: 'optional' });
    expect(attr('ports').type).toBe('list(number)');
    expect(attr('size').mode).toBe('computed_optional');
    expect(attr('admin_password').sensitive).toBe(true);
    expect(attr('public_ip').deprecation).toContain('deprecated');
    expect(attr('disks').nested?.attributes.map((a) => a.name)).toEqual(['size_gb', 'encrypted']);
    expect(server.blocks[0]).toMatchObject({ name: 'network_interface', nesting: 'list' });
    expect(docs.providerSchema.attributes.find((a) => a.name === 'api_token')).toMatchObject({ mode: 'optional', sensitive: true });
  });

  it('reads object attributes and nested element types', () => {
    const docs = parseDocs(
      JSON.stringify({
        version: '0.1',
        provider: { name: 'example' },
        resources: [
          {
            name: 'thing',
            schema: {
              attributes: [
                {
                  name: 'obj',
                  object: {
                    computed_optional_required: 'optional',
                    attribute_types: [
                      { name: 'a', string: {} },
                      { name: 'b', list: { element_type: { int64: {} } } },
                    ],
                  },
                },
                { name: 'sets', set: { computed_optional_required: 'required', element_type: { map: { element_type: { bool: {} } } } } },
              ],
            },
          },
        ],
      }),
      'spec.json',
      'demo',
      'example',
    );
    expect(docs.resources[0]!.schema.attributes.map((a) => a.type)).toEqual(['object({a = string, b = list(number)})', 'set(map(bool))']);
  });

  it('refuses a wrong spec version, a name that is not an identifier and an unknown type, naming each JSON path and the fix', () => {
    const message = errorOf(() =>
      parseDocs(
        spec((s) => {
          s.version = '2.0';
          s.resources[0].name = 'Bad Name';
          s.resources[0].schema.attributes[0] = { name: 'name', strin: { computed_optional_required: 'required' } };
          s.resources[1].schema.attributes[0].string.computed_optional_required = 'sometimes';
        }),
        'spec.json',
        'demo',
        'example',
      ),
    );
    expect(message).toContain('docs spec.json: 4 problems; nothing was published');
    expect(message).toContain('$.version: spec version "2.0" is not supported; write "0.1"');
    expect(message).toContain('$.resources[0].name: "Bad Name" is not a lower-case Terraform identifier');
    expect(message).toContain('$.resources[0].schema.attributes[0]: unknown attribute type "strin"; use exactly one of bool, float64');
    expect(message).toContain(
      '$.resources[1].schema.attributes[0].string.computed_optional_required: "sometimes" is not allowed; use one of computed, computed_optional, optional, required',
    );
  });

  it('refuses a spec of another provider, duplicate names and missing element types', () => {
    expect(
      errorOf(() =>
        parseDocs(
          spec((s) => {
            s.provider.name = 'other';
          }),
          'f',
          'demo',
          'example',
        ),
      ),
    ).toContain('$.provider.name: is "other" but the provider being published is "example"');
    expect(
      errorOf(() =>
        parseDocs(
          spec((s) => {
            s.resources[1].name = s.resources[0].name;
          }),
          'f',
          'demo',
          'example',
        ),
      ),
    ).toContain('$.resources[1].name: "server" appears twice');
    expect(
      errorOf(() =>
        parseDocs(
          spec((s) => {
            delete s.resources[0].schema.attributes[3].map.element_type;
          }),
          'f',
          'demo',
          'example',
        ),
      ),
    ).toContain('$.resources[0].schema.attributes[3].map.element_type: is required for map');
  });

  it('says what is wrong with a file that is not JSON, not found, or neither format', () => {
    expect(errorOf(() => parseDocs('{', 'f.json', 'demo', 'example'))).toContain('docs f.json: not valid JSON');
    expect(errorOf(() => parseDocs('{"hello": 1}', 'f.json', 'demo', 'example'))).toContain('neither a Provider Code Specification');
    expect(errorOf(() => readDocsFile('/nonexistent/spec.json', 'demo', 'example'))).toContain('cannot be read (ENOENT)');
  });
});

describe('terraform providers schema -json', () => {
  const schema = {
    format_version: '1.0',
    provider_schemas: {
      'registry.terraform.io/hashicorp/other': { provider: { version: 0, block: {} } },
      'registry.example.com/demo/example': {
        provider: {
          version: 0,
          block: { attributes: { endpoint: { type: 'string', optional: true, description: 'API endpoint' } }, description_kind: 'plain' },
        },
        resource_schemas: {
          example_server: {
            version: 0,
            block: {
              attributes: {
                id: { type: 'string', computed: true },
                name: { type: 'string', required: true, description: 'Name' },
                tags: { type: ['map', 'string'], optional: true },
                secret: { type: 'string', optional: true, sensitive: true, deprecated: true },
                rules: { nested_type: { nesting_mode: 'list', attributes: { port: { type: 'number', required: true } } }, optional: true },
                shape: { type: ['object', { a: 'string', b: ['list', 'bool'] }], optional: true, computed: true },
              },
              block_types: { disk: { nesting_mode: 'set', min_items: 1, block: { attributes: { size: { type: 'number', required: true } } } } },
            },
          },
        },
        data_source_schemas: { example_image: { version: 0, block: { attributes: { name: { type: 'string', required: true } } } } },
      },
    },
  };

  it("picks this provider's schema and reads every attribute and block", () => {
    const docs = parseDocs(JSON.stringify(schema), 'schema.json', 'demo', 'example');
    expect(docs.source).toBe('terraform-schema');
    const server = docs.resources[0]!.schema;
    expect(server.attributes.map((a) => [a.name, a.type, a.mode])).toEqual([
      ['id', 'string', 'computed'],
      ['name', 'string', 'required'],
      ['tags', 'map(string)', 'optional'],
      ['secret', 'string', 'optional'],
      ['rules', 'list of objects', 'optional'],
      ['shape', 'object({a = string, b = list(bool)})', 'computed_optional'],
    ]);
    expect(server.attributes[3]).toMatchObject({ sensitive: true, deprecation: 'Deprecated.' });
    expect(server.blocks[0]).toMatchObject({ name: 'disk', nesting: 'set', minItems: 1 });
    expect(docs.dataSources.map((d) => d.name)).toEqual(['example_image']);
    expect(docs.providerSchema.attributes[0]).toMatchObject({ name: 'endpoint', description: 'API endpoint' });
  });

  it('refuses output without this provider, naming the ones it has', () => {
    expect(errorOf(() => parseDocs(JSON.stringify(schema), 's.json', 'demo', 'missing'))).toContain(
      'has no schema for …/demo/missing (it has registry.terraform.io/hashicorp/other, registry.example.com/demo/example)',
    );
    expect(errorOf(() => parseDocs(JSON.stringify({ ...schema, format_version: '0.1' }), 's.json', 'demo', 'example'))).toContain(
      '$.format_version: "0.1" is not supported',
    );
  });
});

describe('signing key fingerprints on pages', () => {
  it('match what GnuPG computes for the same armored key', async () => {
    const { publicKey } = await generateSigningKey({ name: 'fingerprint test', type: 'ecc' });
    const home = mkdtempSync(join(tmpdir(), 'edge-registry-gpg-'));
    try {
      const file = join(home, 'key.asc');
      writeFileSync(file, publicKey.ascii_armor);
      const out = execFileSync('gpg', ['--homedir', home, '--batch', '--with-colons', '--import-options', 'show-only', '--import', file], { encoding: 'utf8' });
      const gpgFingerprint = /^fpr:+([0-9A-F]+):/m.exec(out)![1];
      expect(fingerprintOf(publicKey)).toBe(gpgFingerprint);
      expect(fingerprintOf({ ...publicKey, key_id: '0000000000000000' })).toBe('');
      expect(fingerprintOf({ key_id: 'X', ascii_armor: 'garbage' })).toBe('');
    } finally {
      spawnSync('gpgconf', ['--homedir', home, '--kill', 'gpg-agent'], { stdio: 'ignore' }); // in case gpg started one
      rmSync(home, { recursive: true, force: true });
    }
  });
});
