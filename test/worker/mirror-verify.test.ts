import { describe, expect, it } from 'vitest';
import { InputError, UpstreamError } from '../../src/protocol/errors';
import {
  hasAnnouncedSize,
  holdsProviderExecutable,
  matchesDocumentShasum,
  matchesH1,
  matchesSignedSums,
  matchesSumsLine,
  matchesZh,
  unchangedWhileRead,
  type OpenedZip,
  type ReadDigest,
} from '../../src/mirror/archive-checks';
import { verifyMirroredArchive, type ArchiveSource } from '../../src/mirror/verify-archive';

// The one verification of a mirrored archive (src/mirror/verify-archive.ts) that mirror sync, import and
// pull-through call, with the checks of src/mirror/archive-checks.ts, on a source made up here: the bytes checks
// run before the source keeps its bytes, the zip checks after, in order; a failed zip check discards what the
// source kept (its note ends the message); the way in chooses the error type; a source that skips the checks fails.

const SHA = 'a'.repeat(64);
const OTHER = 'b'.repeat(64);
const EXE = 'terraform-provider-thing_v1.0.0';
const RELEASE = { type: 'thing', version: '1.0.0', platform: { os: 'linux' } };

function source(read: ReadDigest, zip: Partial<OpenedZip> = {}, options: { skipSettle?: boolean } = {}) {
  const events: string[] = [];
  const archive: ArchiveSource = {
    async read(settle) {
      events.push('read');
      if (!options.skipSettle) settle(read);
      events.push('kept');
      return read;
    },
    async open() {
      events.push('open');
      return { entries: [{ name: EXE }], h1: 'h1:abc=', sha256Hex: null, ...zip };
    },
    async discard() {
      events.push('discard');
      return 'deleted it again';
    },
  };
  return { archive, events };
}
const upstream = (message: string) => new UpstreamError(message);
const input = (message: string) => new InputError(message);

describe('verifyMirroredArchive', () => {
  it('passes an archive every check accepts and returns what its record needs', async () => {
    const { archive, events } = source({ sha256Hex: SHA, size: 10 }, { sha256Hex: SHA });
    const checks = [
      matchesDocumentShasum({ shasum: SHA, downloadUrl: 'https://up/a.zip', documentUrl: 'https://up/doc' }),
      matchesSumsLine([{ filename: 'a.zip', sha256Hex: SHA }], 'a.zip', 'https://up/SUMS'),
      hasAnnouncedSize(10, 'a.zip'),
      matchesSignedSums(SHA, 'a.zip'),
      unchangedWhileRead('https://up/a.zip'),
      holdsProviderExecutable(RELEASE, 'archive check failed: a.zip'),
      matchesH1(['h1:abc='], 'a.zip', 'doc.json'),
      matchesZh([`zh:${SHA}`], 'a.zip', 'doc.json'),
    ];
    expect(await verifyMirroredArchive(archive, checks, upstream)).toEqual({ sha256Hex: SHA, size: 10, h1: 'h1:abc=' });
    expect(events).toEqual(['read', 'kept', 'open']);
  });

  it('refuses bytes before the source keeps them, with the first failed check, as the way in chooses', async () => {
    const { archive, events } = source({ sha256Hex: OTHER, size: 9 });
    const refused = verifyMirroredArchive(archive, [hasAnnouncedSize(10, 'https://up/a.zip'), matchesSignedSums(SHA, 'https://up/a.zip')], upstream);
    await expect(refused).rejects.toThrow(new UpstreamError('checksum check failed: https://up/a.zip ended after 9 of 10 bytes'));
    await expect(refused).rejects.toBeInstanceOf(UpstreamError);
    expect(events).toEqual(['read']);

    const sums = verifyMirroredArchive(
      source({ sha256Hex: OTHER, size: 9 }).archive,
      [matchesSumsLine([{ filename: 'a.zip', sha256Hex: SHA }], 'a.zip', 'https://up/SUMS')],
      input,
    );
    await expect(sums).rejects.toThrow(`SHA256SUMS check failed: https://up/SUMS says ${SHA} for a.zip, the archive is ${OTHER}`);
    await expect(sums).rejects.toBeInstanceOf(InputError);
    await expect(verifyMirroredArchive(source({ sha256Hex: SHA, size: 9 }).archive, [matchesSumsLine([], 'a.zip', 'https://up/SUMS')], input)).rejects.toThrow(
      'SHA256SUMS check failed: https://up/SUMS has no line for a.zip',
    );
  });

  it('discards what the source kept when a zip check fails, and says so', async () => {
    const { archive, events } = source({ sha256Hex: SHA, size: 10 }, { entries: [{ name: 'README.md' }] });
    await expect(verifyMirroredArchive(archive, [holdsProviderExecutable(RELEASE, 'archive check failed: https://up/a.zip')], upstream)).rejects.toThrow(
      new UpstreamError(`archive check failed: https://up/a.zip holds no provider executable ${EXE} (found README.md); deleted it again`),
    );
    expect(events).toEqual(['read', 'kept', 'open', 'discard']);
    await expect(
      verifyMirroredArchive(source({ sha256Hex: SHA, size: 10 }, { sha256Hex: OTHER }).archive, [unchangedWhileRead('a.zip')], input),
    ).rejects.toThrow(`archive check failed: a.zip changed while being read (SHA-256 ${OTHER}, expected ${SHA})`);
    await expect(verifyMirroredArchive(source({ sha256Hex: SHA, size: 10 }).archive, [matchesZh([`zh:${OTHER}`], 'a.zip', 'doc.json')], input)).rejects.toThrow(
      `hash check failed: a.zip has zh:${SHA}, doc.json says zh:${OTHER}`,
    );
  });

  it('fails a source that kept its bytes without running the bytes checks', async () => {
    const { archive } = source({ sha256Hex: OTHER, size: 1 }, {}, { skipSettle: true });
    await expect(verifyMirroredArchive(archive, [matchesSignedSums(SHA, 'a.zip')], upstream)).rejects.toThrow(/without running the bytes checks/);
  });
});
