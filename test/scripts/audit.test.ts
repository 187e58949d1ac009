import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { inspectArchive } from '../../scripts/lib/provider/archive';
import { parseSince } from '../../scripts/lib/audit';
import { zipBuffers } from '../../scripts/lib/provider/zip-binary';
import type { AuditEntry } from '../../src/store/audit/entry';
import { executableName, parsePlatformName } from '../../src/protocol/index';
import { configPath, runScript, tempDir, writeDist, writeKeyFile } from './helpers';

/**
 * Every CLI write path leaves an audit entry (actor: the operator, local state here), refusals included, dry
 * runs none; `npm run audit` lists and filters them. The store side (never rewritten, time windows) is
 * test/worker/store/audit.test.ts.
 */

const { dir, cleanup } = tempDir('audit');
const state = join(dir, 'state');
afterAll(cleanup);
const at = ['--persist-to', state, '--config', configPath];

async function audit(...args: string[]): Promise<AuditEntry[]> {
  const result = await runScript('audit', [...args, '--json', ...at]);
  expect(result.code, result.stderr).toBe(0);
  return (JSON.parse(result.stdout) as { entries: AuditEntry[] }).entries;
}

const summary = (entries: AuditEntry[]) => entries.map((e) => `${e.action} ${e.outcome} ${e.target}`);
const operator = { kind: 'operator', via: 'local' };

describe('audit entries of the CLI write paths', () => {
  it('keys, tokens, provider and module publishes, mirror import: ok, unchanged, refused; dry runs leave none', async () => {
    const key = await writeKeyFile(dir);
    expect((await runScript('keys', ['import', '--namespace', 'acme', '--key-file', key.path, ...at])).code).toBe(0);
    expect((await runScript('keys', ['import', '--namespace', 'acme', '--key-file', key.path, ...at])).code).toBe(0);
    expect((await runScript('keys', ['remove', '--namespace', 'acme', '--key-id', '0123456789ABCDEF', ...at])).code).toBe(1);

    const created = await runScript('token', ['create', '--namespace', 'acme', '--name', 'ci', ...at]);
    expect(created.code, created.stderr).toBe(0);
    const token = created.stdout.trim().split('\n').pop()!;
    // Revoking by the token itself works and keeps the token out of the log.
    expect((await runScript('token', ['revoke', token, ...at])).code).toBe(0);

    const dist = await writeDist(join(dir, 'dist'), 'thing', '1.0.0');
    const publish = (args: string[] = []) => runScript('publish-provider', [dist, '--namespace', 'acme', '--key-file', key.path, ...args, ...at]);
    expect((await publish(['--dry-run'])).code).toBe(0);
    expect((await publish()).code).toBe(0);
    expect((await publish()).code).toBe(0);
    const rebuilt = await writeDist(join(dir, 'rebuilt'), 'thing', '1.0.0', { salt: 'other bytes' });
    const refused = await runScript('publish-provider', [rebuilt, '--namespace', 'acme', '--key-file', key.path, ...at]);
    expect(refused.code).toBe(1);

    const module = join(dir, 'module');
    mkdirSync(module);
    writeFileSync(join(module, 'main.tf'), 'variable "name" {}\n');
    expect((await runScript('publish-module', [module, '--namespace', 'other', '--name', 'vpc', '--system', 'aws', '--version', '1.0.0', ...at])).code).toBe(0);

    const source = join(dir, 'mirror', 'registry.terraform.io', 'hashicorp', 'null');
    mkdirSync(source, { recursive: true });
    const zip = join(source, 'terraform-provider-null_3.2.0_linux_amd64.zip');
    writeFileSync(zip, await zipBuffers({ [executableName('null', '3.2.0', parsePlatformName('linux_amd64'))]: '#!/bin/sh\n' }));
    const digest = await inspectArchive(zip);
    writeFileSync(join(source, 'index.json'), JSON.stringify({ versions: { '3.2.0': {} } }));
    writeFileSync(
      join(source, '3.2.0.json'),
      JSON.stringify({ archives: { linux_amd64: { url: 'terraform-provider-null_3.2.0_linux_amd64.zip', hashes: [digest.h1, `zh:${digest.sha256Hex}`] } } }),
    );
    const imported = await runScript('mirror', ['import', join(dir, 'mirror'), '--persist-to', state, '--wrangler-config', configPath]);
    expect(imported.code, imported.stderr).toBe(0);

    const entries = await audit();
    expect(summary(entries)).toEqual([
      'key.add ok registry.example.com/acme',
      'key.add unchanged registry.example.com/acme',
      'key.remove refused registry.example.com/acme',
      `token.create ok token ${entries[3]!.target.slice(6)}`,
      `token.revoke ok token ${entries[3]!.target.slice(6)}`,
      'provider.publish ok registry.example.com/acme/thing 1.0.0',
      'provider.publish unchanged registry.example.com/acme/thing 1.0.0',
      'provider.publish refused registry.example.com/acme/thing 1.0.0',
      'module.publish ok registry.example.com/other/vpc/aws 1.0.0',
      'mirror.import ok registry.terraform.io/hashicorp/null 3.2.0',
    ]);
    // The operator's commands are the operator's; a publish goes through the Worker's publish API, with the publish
    // token the CLI made for exactly that package (stores/local-publish.ts): the entry names that token.
    const publishes = entries.filter((e) => e.action.endsWith('.publish'));
    expect(entries.filter((e) => !publishes.includes(e)).every((e) => JSON.stringify(e.actor) === JSON.stringify(operator))).toBe(true);
    for (const e of publishes) {
      expect(e.actor).toMatchObject({ kind: 'token', name: expect.stringMatching(/^publish-(provider|module) \(local, pid \d+ on .+\)$/) });
    }
    expect(entries[3]).toMatchObject({ namespaces: ['acme'], reason: expect.stringContaining('read token "ci", scopes acme') });
    expect(entries[2]!.reason).toMatch(/has no signing key 0123456789ABCDEF/);
    expect(entries[7]!.reason).toMatch(/already published with different contents/);
    // The publish API's entry: every file of the release (the archives, SHA256SUMS, its signature, the manifest).
    expect(Object.keys(entries[5]!.digests!).sort()).toEqual([
      'terraform-provider-thing_1.0.0_SHA256SUMS',
      'terraform-provider-thing_1.0.0_SHA256SUMS.sig',
      'terraform-provider-thing_1.0.0_darwin_arm64.zip',
      'terraform-provider-thing_1.0.0_linux_amd64.zip',
      'terraform-provider-thing_1.0.0_manifest.json',
      'terraform-provider-thing_1.0.0_windows_amd64.zip',
    ]);
    expect(entries[9]!.digests).toEqual({ linux_amd64: digest.sha256Hex });
    expect(JSON.stringify(entries)).not.toContain(token.slice(4));
    for (const e of entries) expect(Date.now() - Date.parse(e.time)).toBeLessThan(30 * 60_000);

    // Filters, and the human listing.
    expect(summary(await audit('--namespace', 'other'))).toEqual(['module.publish ok registry.example.com/other/vpc/aws 1.0.0']);
    expect(await audit('--since', '2099-01-01')).toEqual([]);
    expect((await audit('--since', '1h', '--namespace', 'acme')).length).toBe(8);
    const human = await runScript('audit', ['--namespace', 'hashicorp', ...at]);
    expect(human.stdout).toMatch(
      /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}  ok {9}mirror\.import {5}registry\.terraform\.io\/hashicorp\/null 3\.2\.0  by operator via local state\n$/,
    );
    const bad = await runScript('audit', ['--since', 'last tuesday', ...at]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--since "last tuesday": use a duration like 30m, 12h, 7d, 4w or a date/);
  });
});

describe('parseSince', () => {
  const now = Date.parse('2026-05-10T12:00:00Z');
  it('reads durations back from now and dates (UTC midnight)', () => {
    expect(parseSince('7d', now).toISOString()).toBe('2026-05-03T12:00:00.000Z');
    expect(parseSince('30m', now).toISOString()).toBe('2026-05-10T11:30:00.000Z');
    expect(parseSince('2026-05-01', now).toISOString()).toBe('2026-05-01T00:00:00.000Z');
    expect(parseSince('2026-05-01T06:00:00Z', now).toISOString()).toBe('2026-05-01T06:00:00.000Z');
    for (const bad of ['soon', '7', '-1d', '2026-13-45', '']) expect(() => parseSince(bad, now), bad).toThrow(/--since/);
  });
});
