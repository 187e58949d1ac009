import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inspectArchive, sha256File } from '../../scripts/lib/provider/archive';
import { zipBuffers } from '../../scripts/lib/provider/zip-binary';
import { formatShasums, parseShasums } from '../../src/protocol/hashes';
import { have, tempDir } from './helpers';

/**
 * zh and h1 of real zips, cross-checked against independent tools:
 * `sha256sum` for zh and SHA256SUMS, Go's golang.org/x/mod/sumdb/dirhash
 * (what Terraform uses) for h1. Go and x/mod come from Debian's golang-go
 * and golang-golang-x-mod-dev (.ci/run installs them); without them the h1
 * cross-check is skipped locally and fails in CI.
 */

const GOPATH = '/usr/share/gocode';
const goReady = have('go', ['version']) && existsSync(join(GOPATH, 'src/golang.org/x/mod/sumdb/dirhash'));

const GO_PROGRAM = `package main

import (
	"archive/zip"
	"fmt"
	"os"
	"strings"

	"golang.org/x/mod/sumdb/dirhash"
)

// dirhash ZIP...          prints dirhash.HashZip(ZIP, Hash1) per line
// mkzip OUT NAME...       writes a zip the way Go (and goreleaser) do: streamed entries with data descriptors
func main() {
	switch os.Args[1] {
	case "dirhash":
		for _, path := range os.Args[2:] {
			h, err := dirhash.HashZip(path, dirhash.Hash1)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			fmt.Println(h)
		}
	case "mkzip":
		f, err := os.Create(os.Args[2])
		if err != nil {
			panic(err)
		}
		w := zip.NewWriter(f)
		for _, name := range os.Args[3:] {
			e, err := w.Create(name)
			if err != nil {
				panic(err)
			}
			if !strings.HasSuffix(name, "/") {
				e.Write([]byte(strings.Repeat(name+"\\n", 5000)))
			}
		}
		if err := w.Close(); err != nil {
			panic(err)
		}
		f.Close()
	}
}
`;
import { missing } from '../tools';

describe('SHA256SUMS format', () => {
  const { dir, cleanup } = tempDir('sums');
  afterAll(cleanup);

  it('formatShasums is byte-identical to sha256sum over the sorted file names, and sha256sum -c accepts it', async () => {
    const names = [
      'terraform-provider-x_1.0.0_windows_amd64.zip',
      'terraform-provider-x_1.0.0_darwin_arm64.zip',
      'terraform-provider-x_1.0.0_linux_amd64.zip',
      'terraform-provider-x_1.0.0_linux_arm64.zip',
    ];
    const entries = [];
    for (const name of names) {
      writeFileSync(join(dir, name), await zipBuffers({ [`f-${name}`]: randomBytes(1000) }));
      entries.push({ filename: name, sha256Hex: (await sha256File(join(dir, name))).sha256Hex });
    }
    const ours = formatShasums(entries);
    const sorted = [...names].sort();
    const theirs = execFileSync('sha256sum', sorted, { cwd: dir, encoding: 'utf8', env: { ...process.env, LC_ALL: 'C' } });
    expect(ours).toBe(theirs);
    expect(ours.split('\n').filter(Boolean)).toHaveLength(4);
    expect(ours.endsWith('\n')).toBe(true);
    writeFileSync(join(dir, 'SUMS'), ours);
    expect(spawnSync('sha256sum', ['-c', '--strict', 'SUMS'], { cwd: dir }).status).toBe(0);
    expect(parseShasums(ours)).toEqual([...entries].sort((a, b) => (a.filename < b.filename ? -1 : 1)));
  });

  it('parseShasums reads binary-mode lines and rejects anything else, naming the line', () => {
    const hex = 'a'.repeat(64);
    expect(parseShasums(`${hex} *x.zip\n`)).toEqual([{ filename: 'x.zip', sha256Hex: hex }]);
    expect(() => parseShasums(`${hex}  x.zip\nnot a line\n`)).toThrow(/line 2/);
    expect(() => parseShasums(`${hex}  x.zip\n${hex}  x.zip\n`)).toThrow(/twice/);
    expect(() => parseShasums(`${'a'.repeat(63)}  x.zip\n`)).toThrow(/line 1/);
  });
});

describe('zh and h1 of zips', () => {
  const { dir, cleanup } = tempDir('h1');
  let tool = '';
  beforeAll(() => {
    if (!goReady) return;
    writeFileSync(join(dir, 'main.go'), GO_PROGRAM);
    tool = join(dir, 'gotool');
    execFileSync('go', ['build', '-o', tool, 'main.go'], {
      cwd: dir,
      env: { ...process.env, GO111MODULE: 'off', GOPATH, GOFLAGS: '', GOCACHE: join(dir, 'gocache'), GOTOOLCHAIN: 'local' },
      stdio: 'pipe',
    });
  }, 120_000);
  afterAll(cleanup);

  const goDirhash = (path: string) => execFileSync(tool, ['dirhash', path], { encoding: 'utf8' }).trim();
  const sha256sum = (path: string) => execFileSync('sha256sum', [path], { encoding: 'utf8' }).slice(0, 64);

  const vectors: Record<string, () => Promise<Buffer>> = {
    'one executable': () => zipBuffers({ 'terraform-provider-x_v1.0.0': '#!/bin/sh\necho hi\n' }),
    'several files and directory entries': () => zipBuffers({ 'docs/': '', 'docs/index.md': '# x\n', 'terraform-provider-x_v1.0.0': 'bin', LICENSE: 'MIT\n' }),
    'names sorted by bytes (A Z _ a a-b a.b a/b)': () => zipBuffers({ a: '1', 'a-b': '2', 'a.b': '3', 'a/b': '4', A: '5', Z: '6', _x: '7' }),
    'UTF-8 names': () => zipBuffers({ 'docs/ünïcode.md': 'u', '日本語.txt': 'j', 'emoji-🙂': 'e' }),
    'an empty file': () => zipBuffers({ empty: '', 'terraform-provider-x_v1.0.0': 'x' }),
    'stored (not deflated) entries': () => zipBuffers({ 'terraform-provider-x_v1.0.0': randomBytes(300_000), b: 'b'.repeat(10_000) }, { compress: false }),
    'a 3 MB deflated entry': () => zipBuffers({ 'terraform-provider-x_v1.0.0': Buffer.concat([randomBytes(1_000_000), Buffer.alloc(2_000_000, 7)]) }),
  };

  for (const [name, build] of Object.entries(vectors)) {
    it.skipIf(missing('go with golang.org/x/mod', goReady))(`matches Go's dirhash.HashZip and sha256sum: ${name}`, async () => {
      const path = join(dir, `${name.replace(/[^a-z0-9]+/gi, '-')}.zip`);
      writeFileSync(path, await build());
      const digest = await inspectArchive(path);
      expect(digest.h1).toBe(goDirhash(path));
      expect(digest.sha256Hex).toBe(sha256sum(path));
      expect(digest.size).toBe((await sha256File(path)).size);
    });
  }

  it.skipIf(missing('go with golang.org/x/mod', goReady))('reads zips written by Go archive/zip (data descriptors, as goreleaser writes them)', async () => {
    const path = join(dir, 'go-written.zip');
    execFileSync(tool, ['mkzip', path, 'terraform-provider-x_v1.0.0', 'docs/', 'docs/a.md', 'README']);
    const digest = await inspectArchive(path);
    expect(digest.h1).toBe(goDirhash(path));
    expect(digest.sha256Hex).toBe(sha256sum(path));
    expect(digest.entries.map((e) => e.name)).toEqual(['README', 'docs/', 'docs/a.md', 'terraform-provider-x_v1.0.0']);
  });

  it('refuses a corrupted zip, naming the file', async () => {
    const path = join(dir, 'corrupt.zip');
    const zip = await zipBuffers({ 'terraform-provider-x_v1.0.0': randomBytes(5000) }, { compress: false });
    zip[100] = zip[100]! ^ 0xff; // inside the stored data: CRC-32 no longer matches
    writeFileSync(path, zip);
    await expect(inspectArchive(path)).rejects.toThrow(/corrupt\.zip.*(CRC-32|cannot be read)/);
    writeFileSync(path, 'not a zip at all');
    await expect(inspectArchive(path)).rejects.toThrow(/corrupt\.zip: not a readable zip file/);
  });
});
