import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as openpgp from 'openpgp';
import yauzl from 'yauzl';
import yazl from 'yazl';
import { formatShasums, type ZipEntryDigest } from '../../src/protocol/hashes';
import { archiveFilename, executableName, shasumsFilename, shasumsSignatureFilename } from '../../src/protocol/release-files';

/**
 * Generates a provider release on disk as goreleaser lays it out in dist/:
 * one real zip per platform holding a fake executable
 * terraform-provider-TYPE_vVERSION (.exe on Windows), the SHA256SUMS file and
 * its detached binary OpenPGP signature, made with a fresh key whose public
 * half the test later hands to gpg (an independent verifier).
 */
export interface SigningKeyPair {
  keyId: string;
  publicArmored: string;
  privateArmored: string;
}

export interface GeneratedRelease {
  dir: string;
  type: string;
  version: string;
  /** os_arch → archive path. */
  archives: Map<string, string>;
  shasumsPath: string;
  signaturePath: string;
}

export async function generateSigningKey(): Promise<SigningKeyPair> {
  const { privateKey, publicKey } = await openpgp.generateKey({
    type: 'ecc',
    curve: 'curve25519Legacy',
    userIDs: [{ name: 'edge-registry e2e', email: 'e2e@example.com' }],
    format: 'armored',
  });
  const key = await openpgp.readKey({ armoredKey: publicKey });
  return { keyId: key.getKeyID().toHex().toUpperCase(), publicArmored: publicKey, privateArmored: privateKey };
}

export async function generateRelease(
  dir: string,
  type: string,
  version: string,
  platforms: readonly string[],
  key: SigningKeyPair,
): Promise<GeneratedRelease> {
  await mkdir(dir, { recursive: true });
  const archives = new Map<string, string>();
  const sums: { filename: string; sha256Hex: string }[] = [];
  for (const platform of platforms) {
    const [os, arch] = platform.split('_') as [string, string];
    const filename = archiveFilename(type, version, { os, arch });
    // A shell script stands in for the provider binary; its text differs per platform and version.
    const executable = Buffer.from(`#!/bin/sh\necho "fake ${type} provider ${version} for ${platform}"\nexit 1\n`);
    const zip = await zipOf([
      { name: executableName(type, version, { os }), data: executable, mode: 0o100755 },
      { name: 'LICENSE', data: Buffer.from(`fake license for ${type} ${version}\n`), mode: 0o100644 },
    ]);
    const path = join(dir, filename);
    await writeFile(path, zip);
    archives.set(platform, path);
    sums.push({ filename, sha256Hex: createHash('sha256').update(zip).digest('hex') });
  }
  const shasums = formatShasums(sums);
  const shasumsPath = join(dir, shasumsFilename(type, version));
  await writeFile(shasumsPath, shasums);
  const privateKey = await openpgp.readPrivateKey({ armoredKey: key.privateArmored });
  const signature = await openpgp.sign({
    message: await openpgp.createMessage({ binary: Buffer.from(shasums) }),
    signingKeys: privateKey,
    detached: true,
    format: 'binary',
  });
  const signaturePath = join(dir, shasumsSignatureFilename(type, version));
  await writeFile(signaturePath, signature as Uint8Array);
  return { dir, type, version, archives, shasumsPath, signaturePath };
}

function zipOf(entries: { name: string; data: Buffer; mode: number }[]): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  // A fixed mtime keeps the archives byte-identical between runs.
  for (const entry of entries) zip.addBuffer(entry.data, entry.name, { mtime: new Date('2026-01-01T00:00:00Z'), mode: entry.mode });
  zip.end();
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    zip.outputStream.on('data', (chunk: Buffer) => chunks.push(chunk));
    zip.outputStream.on('end', () => resolve(Buffer.concat(chunks)));
    zip.outputStream.on('error', reject);
  });
}

/** The name and SHA-256 of every file entry in a zip (directories skipped, as dirhash does). */
export function zipDigests(zip: Buffer): Promise<ZipEntryDigest[]> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(zip, { lazyEntries: true }, (error, archive) => {
      if (error || !archive) return reject(error ?? new Error('unreadable zip'));
      const digests: ZipEntryDigest[] = [];
      archive.on('entry', (entry: yauzl.Entry) => {
        if (entry.fileName.endsWith('/')) return archive.readEntry();
        archive.openReadStream(entry, (streamError, stream) => {
          if (streamError || !stream) return reject(streamError ?? new Error(`cannot read ${entry.fileName}`));
          const hash = createHash('sha256');
          stream.on('data', (chunk: Buffer) => hash.update(chunk));
          stream.on('end', () => {
            digests.push({ name: entry.fileName, sha256Hex: hash.digest('hex') });
            archive.readEntry();
          });
          stream.on('error', reject);
        });
      });
      archive.on('end', () => resolve(digests));
      archive.on('error', reject);
      archive.readEntry();
    });
  });
}
