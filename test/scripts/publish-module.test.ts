import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createGzip } from 'node:zlib';
import tar from 'tar-stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readRegistryConfig, type RegistryConfig } from '../../scripts/lib/config';
import { openLocalStore } from '../../scripts/lib/stores/local';
import { type StoreHandle } from '../../scripts/lib/stores/handle';
import { readSuppliedPackage } from '../../scripts/lib/module/archive';
import { DEMO_MODULE, publishDemoModule, writeDemoModule } from '../../scripts/lib/demo/module';
import { extractModuleDocs } from '../../scripts/lib/module/docs';
import { renderReadme } from '../../src/http/readme';
import { packModule } from '../../scripts/lib/module/pack';
import { publishModule } from '../../scripts/lib/module/publish';
import { KILL_ENV } from '../../scripts/lib/progress';
import { zipBuffers } from '../../scripts/lib/provider/zip-binary';
import { sha256Hex } from '../../src/protocol/index';
import { moduleAddress, type ModuleAddress } from '../../src/protocol/modules-v1';
import {
  moduleArchiveFilename,
  moduleCatalogKey,
  moduleCommittedRecordKey,
  moduleDocsKey,
  moduleDownloadKey,
  moduleObjectKey,
  moduleRecordKey,
  moduleVersionsKey,
} from '../../src/store/layout';
import { publishModuleVersion, verifyModuleVersion } from '../../src/store/modules/write';
import { readModuleRecord } from '../../src/store/modules/record';
import { rebuildModuleIndex } from '../../src/store/modules/lists';
import type { ModuleCatalog, ModuleDocs, ModuleVersionRecord } from '../../src/store/modules/types';
import { fakeDocs } from '../fixtures/modules';
import { configPath, killableEnv, runScript, tempDir } from './helpers';
import { StoredReleaseMismatchError } from '../../src/store/errors';

const MB = 1e6;
const work = tempDir('publish-module');
let config: RegistryConfig;
let store: StoreHandle;

beforeAll(async () => {
  config = await readRegistryConfig({ configPath, persistTo: join(work.dir, 'state') });
  store = await openLocalStore(config, { registry: {} });
});
afterAll(async () => {
  await store.close();
  work.cleanup();
});

let counter = 0;
/** A fresh module directory with `files` (path → content). */
function moduleDir(files: Record<string, string>): string {
  const dir = join(work.dir, `module-${counter++}`);
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
  return dir;
}

/** A .tar.gz with the given raw entries (names and types as written, for the refusal cases). */
async function tarGz(entries: { name: string; content?: string; type?: 'file' | 'symlink' | 'fifo'; linkname?: string }[]): Promise<Buffer> {
  const pack = tar.pack();
  const gzip = createGzip();
  const chunks: Buffer[] = [];
  gzip.on('data', (c: Buffer) => chunks.push(c));
  const done = new Promise((resolve) => gzip.on('end', resolve));
  pack.pipe(gzip);
  for (const e of entries) pack.entry({ name: e.name, type: e.type ?? 'file', linkname: e.linkname }, e.content ?? '');
  pack.finalize();
  await done;
  return Buffer.concat(chunks);
}

function writeFile(name: string, bytes: Uint8Array): string {
  const path = join(work.dir, name);
  writeFileSync(path, bytes);
  return path;
}

const publish = (path: string, version: string, extra: Partial<Parameters<typeof publishModule>[0]> = {}) =>
  publishModule({ path, namespace: 'acme', name: 'vpc', system: 'aws', version, store, config, ...extra });

describe('packing a directory', () => {
  it('is deterministic: two packs of the same tree (and of a copy made later) are byte-identical', async () => {
    const a = join(work.dir, 'det-a');
    const b = join(work.dir, 'det-b');
    writeDemoModule(a, '1.0.0');
    const first = await packModule(a, 100 * MB);
    const second = await packModule(a, 100 * MB);
    expect(Buffer.from(second.bytes).equals(Buffer.from(first.bytes))).toBe(true);
    await new Promise((r) => setTimeout(r, 1100)); // other mtimes
    writeDemoModule(b, '1.0.0');
    expect(Buffer.from((await packModule(b, 100 * MB)).bytes).equals(Buffer.from(first.bytes))).toBe(true);
  });

  it('writes sorted, normalised entries that GNU tar reads (independent check), leaving out .git, .terraform, state files and nested lock files', async () => {
    const dir = moduleDir({
      'main.tf': 'variable "a" {}\n',
      'b.tf': '',
      'README.md': '# x\n',
      '.terraform.lock.hcl': '# root lock\n',
      'modules/sub/main.tf': '',
      'modules/sub/.terraform.lock.hcl': '',
      '.git/HEAD': 'ref',
      '.terraform/modules/x': '',
      'terraform.tfstate': '{}',
      'terraform.tfstate.backup': '{}',
      'env/prod.tfstate': '{}',
      'scripts/run.sh': '#!/bin/sh\n',
    });
    spawnSync('chmod', ['755', join(dir, 'scripts/run.sh')]);
    const packed = await packModule(dir, 100 * MB);
    const path = writeFile('listing.tar.gz', packed.bytes);
    const listing = spawnSync('tar', ['--numeric-owner', '-tvzf', path], { encoding: 'utf8' });
    expect(listing.status).toBe(0);
    const lines = listing.stdout.trim().split('\n');
    expect(lines.map((l) => l.split(/\s+/).pop())).toEqual(['.terraform.lock.hcl', 'README.md', 'b.tf', 'main.tf', 'modules/sub/main.tf', 'scripts/run.sh']);
    for (const line of lines) expect(line).toMatch(/^-rw(-r--r--|xr-xr-x) 0\/0 .* 1970-01-01 00:00 /);
    expect(lines.at(-1)).toMatch(/^-rwxr-xr-x/);
    expect(packed.excluded).toEqual(
      expect.arrayContaining(['.git', '.terraform', 'terraform.tfstate', 'terraform.tfstate.backup', 'env/prod.tfstate', 'modules/sub/.terraform.lock.hcl']),
    );
  });

  it('packs a symlink to a file inside the tree as that file', async () => {
    const dir = moduleDir({ 'main.tf': 'output "x" {\n  value = 1\n}\n', 'shared/vars.tf': 'variable "v" {}\n' });
    symlinkSync('shared/vars.tf', join(dir, 'vars.tf'));
    const packed = await packModule(dir, 100 * MB);
    expect(packed.files.map((f) => f.path)).toEqual(['main.tf', 'shared/vars.tf', 'vars.tf']);
  });
});

describe('refusals (each with a clear message, nothing written)', () => {
  it('no .tf or .tofu file at the root of a directory or an archive', async () => {
    await expect(publish(moduleDir({ 'modules/a/main.tf': '' }), '1.0.0')).rejects.toThrow(/no \.tf or \.tofu file at its root/);
    await expect(publish(writeFile('noroot.tar.gz', await tarGz([{ name: 'vpc/main.tf' }])), '1.0.0')).rejects.toThrow(/no \.tf or \.tofu file at its root/);
  });

  it('a .tofu file counts as configuration', async () => {
    expect((await publish(moduleDir({ 'main.tofu': 'variable "x" {}\n' }), '0.0.1', { name: 'tofu' })).status).toBe('published');
  });

  it('a symlink pointing outside the tree, a dangling one, one to a directory', async () => {
    const outside = moduleDir({ 'main.tf': '' });
    symlinkSync('/etc/passwd', join(outside, 'passwd'));
    await expect(publish(outside, '1.0.0')).rejects.toThrow(/passwd: symlink to \/etc\/passwd points outside the module directory/);
    const up = moduleDir({ 'main.tf': '' });
    symlinkSync('../module-0/main.tf', join(up, 'other.tf'));
    await expect(publish(up, '1.0.0')).rejects.toThrow(/points outside the module directory/);
    const dangling = moduleDir({ 'main.tf': '' });
    symlinkSync('missing.tf', join(dangling, 'x.tf'));
    await expect(publish(dangling, '1.0.0')).rejects.toThrow(/points nowhere/);
    const directory = moduleDir({ 'main.tf': '', 'real/a.tf': '' });
    symlinkSync('real', join(directory, 'alias'));
    await expect(publish(directory, '1.0.0')).rejects.toThrow(/symlink to the directory/);
  });

  it('absolute and .. paths, links out of the package and special files inside a supplied archive', async () => {
    const cases: [string, Buffer, RegExp][] = [
      ['abs.tar.gz', await tarGz([{ name: 'main.tf' }, { name: '/etc/cron.d/x' }]), /absolute path/],
      ['dotdot.tar.gz', await tarGz([{ name: 'main.tf' }, { name: 'a/../../x.tf' }]), /"\.\." path segment/],
      ['link.tar.gz', await tarGz([{ name: 'main.tf' }, { name: 'x', type: 'symlink', linkname: '../../etc/passwd' }]), /outside the module/],
      ['abslink.tar.gz', await tarGz([{ name: 'main.tf' }, { name: 'x', type: 'symlink', linkname: '/etc/passwd' }]), /absolute path/],
      ['fifo.tar.gz', await tarGz([{ name: 'main.tf' }, { name: 'p', type: 'fifo' }]), /is a FIFO/],
      ['garbage.tar.gz', Buffer.from('not gzip at all'), /not valid gzip|not a valid tar/],
    ];
    for (const [name, bytes, message] of cases) {
      await expect(publish(writeFile(name, bytes), '1.0.0'), name).rejects.toThrow(message);
    }
    await expect(publish(writeFile('notes.txt', Buffer.from('x')), '1.0.0')).rejects.toThrow(/must be a \.tar\.gz, \.tgz or \.zip/);
  });

  it('a zip with a ".." entry', async () => {
    // yazl refuses to write such names, so the name is patched in place (same length) after writing.
    const zip = Buffer.from(await zipBuffers({ 'main.tf': '', 'aa/bb/x.tf': '' }));
    const patched = Buffer.from(zip.toString('latin1').replaceAll('aa/bb/x.tf', '../../x.tf'), 'latin1');
    await expect(publish(writeFile('slip.zip', patched), '1.0.0')).rejects.toThrow(/outside the module|\.\./);
  });

  it('a package over the size limit, unless the limit is raised', async () => {
    const big = moduleDir({ 'main.tf': '', 'data.bin': '' });
    writeFileSync(join(big, 'data.bin'), randomBytes(3 * MB)); // incompressible
    await expect(publish(big, '1.0.0', { maxMB: 1 })).rejects.toThrow(/over the size limit of 1\.0 MB; raise it with --max-size/);
    const file = writeFile('big.tar.gz', (await packModule(big, 100 * MB)).bytes);
    await expect(publish(file, '1.0.0', { maxMB: 1 })).rejects.toThrow(/over the size limit/);
    expect((await publish(file, '1.0.0', { maxMB: 10, name: 'big' })).status).toBe('published');
  });

  it('a version already published with different bytes (immutable); the same bytes are unchanged', async () => {
    const dir = moduleDir({ 'main.tf': 'variable "a" {}\n' });
    expect((await publish(dir, '3.0.0', { name: 'immutable' })).status).toBe('published');
    expect((await publish(dir, '3.0.0', { name: 'immutable' })).status).toBe('unchanged');
    writeFileSync(join(dir, 'main.tf'), 'variable "b" {}\n');
    await expect(publish(dir, '3.0.0', { name: 'immutable' })).rejects.toThrow(/already published with different contents|different package/);
    const address = moduleAddress(config.hostname, 'acme', 'immutable', 'aws');
    expect(JSON.parse((await store.kv.get(moduleDocsKey(address, '3.0.0'), 'text'))!).inputs[0].name).toBe('a');
  });

  it('malformed names and versions, and HCL that does not parse', async () => {
    const dir = moduleDir({ 'main.tf': '' });
    await expect(publish(dir, 'v1.0.0')).rejects.toThrow(/not a semantic version/);
    await expect(publish(dir, '1.0.0', { namespace: '-x' })).rejects.toThrow(/module namespace "-x" is invalid/);
    await expect(publish(dir, '1.0.0', { system: 'aws_x' })).rejects.toThrow(/module system "aws_x" is invalid/);
    await expect(publish(moduleDir({ 'main.tf': 'variable "x" {\n' }), '1.0.0')).rejects.toThrow(/main\.tf is not valid HCL/);
  });

  it('--dry-run writes nothing', async () => {
    const result = await publish(moduleDir({ 'main.tf': '' }), '1.0.0', { name: 'dry', dryRun: true });
    expect(result.status).toBe('dry-run');
    expect(await store.kv.get(moduleVersionsKey(moduleAddress(config.hostname, 'acme', 'dry', 'aws')), 'text')).toBeNull();
  });
});

describe('supplied packages', () => {
  it('a .tar.gz and a .zip are published as is (same bytes served), with docs from their files', async () => {
    const tgz = await tarGz([
      { name: './main.tf', content: 'variable "z" {\n  default = 1\n}\n' },
      { name: './README.md', content: '# Z\n' },
    ]);
    const result = await publish(writeFile('z.tgz', tgz), '1.0.0', { name: 'zz' });
    expect(result).toMatchObject({ format: 'tar.gz', filename: 'zz-aws-1.0.0.tar.gz', inputs: 1, readme: true, size: tgz.byteLength });
    const zip = Buffer.from(await zipBuffers({ 'main.tf': 'output "o" {\n  value = 1\n}\n', 'modules/a/main.tf': '' }));
    const zipped = await publish(writeFile('z.zip', zip), '1.0.0', { name: 'zipped' });
    expect(zipped).toMatchObject({ format: 'zip', filename: 'zipped-aws-1.0.0.zip', outputs: 1, submodules: ['modules/a'] });
    const head = await store.blobs.head(`modules/${config.hostname}/acme/zipped/aws/1.0.0/zipped-aws-1.0.0.zip`);
    expect(head?.size).toBe(zip.byteLength);
  });

  it('reads a package made by GNU tar (independent producer)', async () => {
    const dir = moduleDir({ 'main.tf': 'variable "g" {}\n' });
    const path = join(work.dir, 'gnu.tar.gz');
    expect(spawnSync('tar', ['-czf', path, '-C', dir, '.']).status).toBe(0);
    const supplied = await readSuppliedPackage(path, 100 * MB);
    expect(supplied.files).toEqual(['main.tf']);
    expect(supplied.docFiles.get('main.tf')).toContain('variable "g"');
  });
});

describe('docs extraction', () => {
  let docs: ModuleDocs;
  beforeAll(async () => {
    docs = await extractModuleDocs(
      new Map([
        [
          'variables.tf',
          `
variable "required_string" {
  type        = string
  description = "A required string."
}
variable "with_default" {
  type    = number
  default = 3
}
variable "untyped" {}
variable "nullable_default" {
  type     = string
  default  = null
  nullable = true
}
variable "not_nullable" {
  type     = list(string)
  default  = ["a", "b"]
  nullable = false
}
variable "complex" {
  type = map(object({
    name = string
    port = optional(number, 80)
  }))
  default = {
    web = { name = "w" }
  }
}
variable "secret" {
  type      = string
  sensitive = true
  validation {
    condition     = length(var.secret) > 8
    error_message = "too short"
  }
  validation {
    condition     = var.secret != "password"
    error_message = "no"
  }
}
variable "flag" {
  type    = bool
  default = false
}
`,
        ],
        [
          'outputs.tf',
          `
output "plain" {
  value = 1
}
output "described" {
  value       = var.required_string
  description = "Echoes the string."
}
output "hidden" {
  value     = var.secret
  sensitive = true
}
`,
        ],
        [
          'versions.tf',
          `
terraform {
  required_version = ">= 1.5, < 2.0"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "~> 5.0"
    }
    ours = {
      source = "registry.example.com/acme/thing"
    }
    legacy = "~> 1.0"
  }
}
`,
        ],
        ['modules/subnet/main.tf', 'variable "cidr" {\n  type = string\n}\noutput "id" {\n  value = var.cidr\n}\n'],
        ['modules/subnet/README.md', 'ignored'],
        ['examples/x/main.tf', 'variable "not_docs" {}\n'],
        [
          'README.md',
          '# Title\n\n<script>alert(1)</script>\n\n<img src="x" onerror="alert(1)">\n\n[link](javascript:alert(1)) [ok](https://example.com) **bold**\n\n| a | b |\n|---|---|\n| 1 | 2 |\n',
        ],
      ]),
    );
  });

  it('every variable form: type, default, description, sensitive, nullable, required, validations', () => {
    const byName = Object.fromEntries(docs.inputs.map((i) => [i.name, i]));
    expect(docs.inputs.map((i) => i.name)).toEqual([
      'complex',
      'flag',
      'not_nullable',
      'nullable_default',
      'required_string',
      'secret',
      'untyped',
      'with_default',
    ]);
    expect(byName.required_string).toEqual({
      name: 'required_string',
      type: 'string',
      default: null,
      description: 'A required string.',
      sensitive: false,
      nullable: true,
      required: true,
      validations: 0,
    });
    expect(byName.with_default).toMatchObject({ type: 'number', default: '3', required: false });
    expect(byName.untyped).toMatchObject({ type: null, default: null, required: true, description: null });
    expect(byName.nullable_default).toMatchObject({ default: 'null', required: false, nullable: true });
    expect(byName.not_nullable).toMatchObject({ type: 'list(string)', default: '["a","b"]', nullable: false });
    expect(byName.complex!.type).toBe('map(object({\n    name = string\n    port = optional(number, 80)\n  }))');
    expect(byName.complex!.default).toBe('{"web":{"name":"w"}}');
    expect(byName.secret).toMatchObject({ sensitive: true, validations: 2, required: true });
    expect(byName.flag).toMatchObject({ type: 'bool', default: 'false' });
  });

  it('outputs, required providers (object and legacy forms), required_version, submodules', () => {
    expect(docs.outputs).toEqual([
      { name: 'described', description: 'Echoes the string.', sensitive: false },
      { name: 'hidden', description: null, sensitive: true },
      { name: 'plain', description: null, sensitive: false },
    ]);
    expect(docs.providers).toEqual([
      { name: 'aws', source: 'hashicorp/aws', version: '~> 5.0' },
      { name: 'legacy', source: null, version: '~> 1.0' },
      { name: 'ours', source: 'registry.example.com/acme/thing', version: null },
    ]);
    expect(docs.requiredVersion).toBe('>= 1.5, < 2.0');
    expect(docs.submodules).toEqual([
      {
        path: 'modules/subnet',
        inputs: [expect.objectContaining({ name: 'cidr', required: true })],
        outputs: [{ name: 'id', description: null, sensitive: false }],
        providers: [],
        requiredVersion: null,
      },
    ]);
  });

  it('README.md becomes sanitised HTML: no scripts, event handlers or javascript: links', () => {
    const html = docs.readmeHtml!;
    expect(html).toContain('<h1>Title</h1>');
    expect(html).toContain('<strong>bold</strong>');
    expect(html).toContain('<a href="https://example.com">ok</a>');
    expect(html).toContain('<table>');
    expect(html).not.toMatch(/<script|onerror|javascript:/i);
    expect(renderReadme('<iframe src="https://evil"></iframe><style>body{}</style>x')).toBe('x');
  });

  it('keeps the raw-text-in-SVG/MathML payloads fixed in sanitize-html 2.17.6/2.17.7 out', () => {
    // These bypassed sanitize-html (used here before the one README renderer) where svg/math or SVG
    // animation elements were allowed; the renderer keeps no tag of the README's own: each must come out inert.
    for (const payload of [
      '<svg><textarea><img src=x onerror=alert(1)></textarea></svg>',
      '<math><xmp><img src=x onerror=alert(1)></xmp></math>',
      '<math><mi><xmp></mi><img src=x onerror=alert(1)></xmp></math>',
      '<svg><animate attributeName="href" values="javascript:alert(1)"/><a><text>x</text></a></svg>',
      '<svg><set attributeName="href" to="javascript:alert(1)"/></svg>',
    ]) {
      expect(renderReadme(payload)).not.toMatch(/<img|<svg|<math|onerror|javascript:|<animate|<set/i);
    }
  });
});

describe('the demo module (npm run demo)', () => {
  it('publishes demo/vpc/aws 1.0.0 and 1.1.0 with the modules/subnet submodule; a re-run (fresh trees) is unchanged', async () => {
    const first = await publishDemoModule(store, config);
    expect(first.map((r) => [r.version, r.status, r.submodules])).toEqual([
      ['1.0.0', 'published', ['modules/subnet']],
      ['1.1.0', 'published', ['modules/subnet']],
    ]);
    const second = await publishDemoModule(store, config);
    expect(second.map((r) => r.status)).toEqual(['unchanged', 'unchanged']);
    const list = await store.kv.get(moduleVersionsKey(moduleAddress(config.hostname, DEMO_MODULE.namespace, DEMO_MODULE.name, DEMO_MODULE.system)), 'text');
    expect(JSON.parse(list!)).toEqual({ modules: [{ versions: [{ version: '1.1.0' }, { version: '1.0.0' }] }] });
  });
});

describe('npm run publish-module (the CLI)', () => {
  // The Worker writes; the CLI is killed while it uploads, before it sends the commit, and after (the local
  // runtime, and with it the Worker's commit, dies with it): the API's upload session, lease and repair.
  it.each(['upload', 'record', 'commit-sent'])(
    'SIGKILLed at %s: the served list stays old or whole, and a re-run completes it without waiting',
    async (stage) => {
      const persistTo = join(work.dir, 'kill-state');
      const killConfig = await readRegistryConfig({ configPath, persistTo });
      const address = moduleAddress(killConfig.hostname, 'acme', 'crashy', 'aws');
      const version = `1.${['upload', 'record', 'commit-sent'].indexOf(stage)}.0`;
      const served = async () => {
        const s = await openLocalStore(killConfig);
        try {
          const text = await s.kv.get(moduleVersionsKey(address), 'text');
          const versions =
            text === null ? [] : (JSON.parse(text) as { modules: [{ versions: { version: string }[] }] }).modules[0].versions.map((v) => v.version);
          // Every listed version is whole: its download document points at a stored package matching its record.
          for (const v of versions) {
            const record = await readModuleRecord(s, address, v);
            const head = await s.blobs.head(moduleObjectKey(address, v, record!.filename));
            expect({ size: head?.size, sha256: head?.customMetadata?.sha256 }).toEqual({ size: record!.size, sha256: record!.sha256 });
            expect(await s.kv.get(moduleDownloadKey(address, v), 'text')).toContain(record!.filename);
          }
          return versions.sort();
        } finally {
          await s.close();
        }
      };
      const dir = moduleDir({ 'main.tf': `variable "stage_${stage}" {}\n` });
      const args = [dir, '--namespace', 'acme', '--name', 'crashy', '--system', 'aws', '--version', version, '--json', '--persist-to', persistTo];
      const before = await served();
      const killed = await runScript('publish-module', args, { [KILL_ENV]: stage, ...killableEnv(work.dir) });
      expect(killed.code, killed.stderr).not.toBe(0);
      expect(killed.stdout).toBe('');
      expect([before, [...before, version].sort()]).toContainEqual(await served());

      const rerun = await runScript('publish-module', args);
      expect(rerun.code, rerun.stderr).toBe(0);
      expect(rerun.stderr).not.toMatch(/waiting for/);
      expect(['published', 'repaired', 'unchanged']).toContain(JSON.parse(rerun.stdout).status);
      expect(await served()).toEqual([...before, version].sort());
      const again = await runScript('publish-module', args);
      expect(again.code, again.stderr).toBe(0);
      expect(JSON.parse(again.stdout).status).toBe('unchanged');
    },
    240_000,
  );

  it('--json prints one object; exit 1 with one line for a refusal; exit 2 for usage', async () => {
    const dir = moduleDir({ 'main.tf': 'variable "a" {}\n' });
    const persist = ['--persist-to', join(work.dir, 'cli-state')];
    const ok = await runScript('publish-module', [dir, '--namespace', 'acme', '--name', 'cli', '--system', 'aws', '--version', '1.0.0', '--json', ...persist]);
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ address: 'registry.example.com/acme/cli/aws', version: '1.0.0', status: 'published', inputs: 1 });
    expect(ok.stderr).toContain('packed');
    const bad = await runScript('publish-module', [
      join(work.dir, 'nowhere'),
      '--namespace',
      'acme',
      '--name',
      'cli',
      '--system',
      'aws',
      '--version',
      '1.0.0',
      ...persist,
    ]);
    expect(bad.code).toBe(1);
    expect(
      bad.stderr
        .trim()
        .split('\n')
        .filter((l) => l.startsWith('error:')),
    ).toEqual([expect.stringContaining('no such file or directory')]);
    expect(bad.stderr).not.toContain('    at ');
    const usage = await runScript('publish-module', [dir, '--namespace', 'acme']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('--name, --system and --version are required');
  });
});

describe('consistency and repair (the same guarantees as providers)', () => {
  const listed = async (address: ModuleAddress) =>
    (
      JSON.parse((await store.kv.get(moduleVersionsKey(address), 'text')) ?? '{"modules":[{"versions":[]}]}') as {
        modules: [{ versions: { version: string }[] }];
      }
    ).modules[0].versions.map((v) => v.version);
  const catalogVersions = async (name: string) =>
    (JSON.parse((await store.kv.get(moduleCatalogKey(config.hostname), 'text'))!) as ModuleCatalog).modules.find((m) => m.name === name)?.versions;

  it('a re-run repairs what was lost (package object, documents, KV record, list, catalog): status repaired, then unchanged', async () => {
    const address = moduleAddress(config.hostname, 'acme', 'interrupted', 'aws');
    const dir = moduleDir({ 'main.tf': 'variable "region" {}\n', 'README.md': '# Interrupted\n' });
    const first = await publish(dir, '1.0.0', { name: 'interrupted' });
    expect(first.status).toBe('published');
    const packageKey = moduleObjectKey(address, '1.0.0', first.filename);
    const before = await Promise.all(
      [moduleDownloadKey(address, '1.0.0'), moduleDocsKey(address, '1.0.0'), moduleRecordKey(address, '1.0.0')].map((key) => store.kv.get(key, 'text')),
    );

    // The package object lost from R2 (deleted by hand, a lost object) and what an interrupted commit leaves missing:
    // the Worker's publish API asks for the package again and restores it from the re-run's bytes.
    await store.blobs.delete(packageKey);
    for (const key of [moduleDownloadKey(address, '1.0.0'), moduleDocsKey(address, '1.0.0'), moduleRecordKey(address, '1.0.0'), moduleVersionsKey(address)]) {
      await store.kv.delete(key);
    }
    await store.kv.put(moduleCatalogKey(config.hostname), '{"modules":[]}');
    const lines: string[] = [];
    const again = await publish(dir, '1.0.0', { name: 'interrupted', log: (line) => lines.push(line) });
    expect(again.status).toBe('repaired');
    expect(lines).toContain('registry.example.com/acme/interrupted/aws 1.0.0 was already published; repaired what an interrupted publish left missing');

    const after = await Promise.all(
      [moduleDownloadKey(address, '1.0.0'), moduleDocsKey(address, '1.0.0'), moduleRecordKey(address, '1.0.0')].map((key) => store.kv.get(key, 'text')),
    );
    expect(after).toEqual(before);
    const head = await store.blobs.head(packageKey);
    expect({ size: head?.size, sha256: head?.customMetadata?.sha256 }).toEqual({ size: first.size, sha256: first.sha256 });
    // The bytes the registry Worker serves to terraform (its download location), hashed here: the published package.
    const { origin, hostname } = store.registry!;
    const located = await fetch(`${origin}/v1/modules/acme/interrupted/aws/1.0.0/download`, { headers: { host: hostname } });
    expect(located.status).toBe(204);
    const archive = await fetch(new URL(located.headers.get('x-terraform-get')!, `${origin}/v1/modules/acme/interrupted/aws/1.0.0/download`), {
      headers: { host: hostname },
    });
    expect(archive.status).toBe(200);
    expect(
      createHash('sha256')
        .update(new Uint8Array(await archive.arrayBuffer()))
        .digest('hex'),
    ).toBe(first.sha256);
    expect(await listed(address)).toEqual(['1.0.0']);
    expect(await catalogVersions('interrupted')).toEqual(['1.0.0']);
    expect((await publish(dir, '1.0.0', { name: 'interrupted' })).status).toBe('unchanged');
  });

  it('a publish killed before its commit lists nothing; the re-run publishes it whole', async () => {
    const address = moduleAddress(config.hostname, 'acme', 'killed', 'aws');
    const bytes = new TextEncoder().encode('not really a tar.gz, the store never unpacks\n');
    const record: ModuleVersionRecord = {
      address,
      version: '1.0.0',
      filename: moduleArchiveFilename(address, '1.0.0', 'tar.gz'),
      format: 'tar.gz',
      sha256: sha256Hex(bytes),
      size: bytes.byteLength,
      publishedAt: new Date(0).toISOString(),
    };
    const pkg = { sha256Hex: record.sha256, size: bytes.byteLength, contentType: 'application/gzip', open: () => bytes };
    let step = '';
    // The lease is "lost" (as when the process dies) at the commit: package and documents are written, the record is not.
    const dying = {
      check: () => {
        if (step === 'record') throw new Error('killed');
      },
    };
    await expect(
      publishModuleVersion(
        store,
        record,
        fakeDocs(),
        pkg,
        (e) => {
          step = e.step;
        },
        { lease: dying },
      ),
    ).rejects.toThrow('killed');
    expect(await store.blobs.head(moduleObjectKey(address, '1.0.0', record.filename))).not.toBeNull();
    expect(await store.kv.get(moduleVersionsKey(address), 'text')).toBeNull();
    expect(await readModuleRecord(store, address, '1.0.0')).toBeNull();

    expect(await publishModuleVersion(store, record, fakeDocs(), pkg)).toBe('published');
    expect(await listed(address)).toEqual(['1.0.0']);
  });

  it("concurrent publishes of one version with different bytes: exactly one wins, the others get 409, the served package is the winner's", async () => {
    const address = moduleAddress(config.hostname, 'acme', 'raced', 'aws');
    const outcomes = await Promise.allSettled([0, 1, 2].map((i) => publish(moduleDir({ 'main.tf': `variable "v${i}" {}\n` }), '1.0.0', { name: 'raced' })));
    const won = outcomes.filter((o): o is PromiseFulfilledResult<Awaited<ReturnType<typeof publish>>> => o.status === 'fulfilled');
    expect(won.map((o) => o.value.status)).toEqual(['published']);
    for (const o of outcomes) if (o.status === 'rejected') expect(String(o.reason)).toMatch(/already published with different contents|different package/);
    const head = await store.blobs.head(moduleObjectKey(address, '1.0.0', won[0]!.value.filename));
    expect(head?.customMetadata?.sha256).toBe(won[0]!.value.sha256);
    expect((await readModuleRecord(store, address, '1.0.0'))?.sha256).toBe(won[0]!.value.sha256);
  });

  it('a package of another format left by an uncommitted publish is removed when the version is published', async () => {
    const address = moduleAddress(config.hostname, 'acme', 'leftover', 'aws');
    const stray = moduleObjectKey(address, '1.0.0', moduleArchiveFilename(address, '1.0.0', 'zip'));
    await store.blobs.put(stray, 'half of a zip');
    const result = await publish(moduleDir({ 'main.tf': '' }), '1.0.0', { name: 'leftover' });
    expect(result.status).toBe('published');
    expect(await store.blobs.head(stray)).toBeNull();
    expect(await store.blobs.head(moduleObjectKey(address, '1.0.0', result.filename))).not.toBeNull();
  });

  it('a stored package that differs from its record is reported loudly when the bytes to restore it are not at hand', async () => {
    const address = moduleAddress(config.hostname, 'acme', 'tampered', 'aws');
    const result = await publish(moduleDir({ 'main.tf': '' }), '1.0.0', { name: 'tampered' });
    const record = (await readModuleRecord(store, address, '1.0.0'))!;
    await store.blobs.put(moduleObjectKey(address, '1.0.0', result.filename), 'other bytes', { customMetadata: { sha256: '0'.repeat(64) } });
    await expect(verifyModuleVersion(store, record, fakeDocs(), undefined)).rejects.toThrow(StoredReleaseMismatchError);
  });

  it('a damaged module version record is reported with its key and skipped; every other version stays listed', async () => {
    const address = moduleAddress(config.hostname, 'acme', 'damaged', 'aws');
    for (const version of ['1.0.0', '1.1.0']) await publish(moduleDir({ 'main.tf': `# ${version}\n` }), version, { name: 'damaged' });
    await store.blobs.put(moduleCommittedRecordKey(address, '1.2.0'), '{"version": "1.2.0", "size": ');
    await store.blobs.put(moduleCommittedRecordKey(address, '1.3.0'), JSON.stringify({ version: '1.3.0', address }));
    const events: string[] = [];
    await rebuildModuleIndex(store, address, (event) => events.push(`${event.step}: ${event.detail}`));
    expect(events).toContain(`warning: version record ${moduleCommittedRecordKey(address, '1.2.0')} is damaged (not JSON); it was skipped`);
    expect(events).toContain(`warning: version record ${moduleCommittedRecordKey(address, '1.3.0')} is damaged (no file name); it was skipped`);
    expect(await listed(address)).toEqual(['1.1.0', '1.0.0']);
    expect(await catalogVersions('damaged')).toEqual(['1.1.0', '1.0.0']);
  });
});
