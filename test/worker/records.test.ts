import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { commitRecord, uploadUnlessStored, verifyObject, type PublishProgress, type StoredFile } from '../../src/store/records';

// The publish building blocks of src/store/records.ts on the real (Miniflare) R2: what a re-run after an
// interrupted publish keeps, what verification accepts, and that a version record is created only once.
// Expected digests come from WebCrypto here, not from the code under test.

const encoder = new TextEncoder();

async function sha256Hex(bytes: Uint8Array): Promise<string> {
  return Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes)), (b) => b.toString(16).padStart(2, '0')).join('');
}

async function storedFile(text: string): Promise<StoredFile & { filename: string; bytes: Uint8Array }> {
  const bytes = encoder.encode(text);
  return { filename: 'thing.zip', bytes, sha256Hex: await sha256Hex(bytes), size: bytes.byteLength, contentType: 'application/zip', open: () => bytes };
}

function recorder(): { progress: PublishProgress; steps: string[] } {
  const steps: string[] = [];
  return { progress: (event) => steps.push(`${event.step} ${event.detail}`), steps };
}

async function storedText(key: string): Promise<string | null> {
  const object = await env.REGISTRY_R2.get(key);
  return object ? object.text() : null;
}

describe('uploadUnlessStored', () => {
  it('keeps an object whose size and SHA-256 both match, without opening the bytes', async () => {
    const key = 'records-test/kept.zip';
    const file = await storedFile('the release bytes');
    await env.REGISTRY_R2.put(key, file.bytes, { customMetadata: { sha256: file.sha256Hex } });
    const { progress, steps } = recorder();
    await uploadUnlessStored(
      env.REGISTRY_R2,
      key,
      {
        ...file,
        open: () => {
          throw new Error('opened');
        },
      },
      progress,
      () => {},
    );
    expect(steps).toEqual(['skip-upload thing.zip']);
  });

  it('replaces an object of the same size whose SHA-256 differs', async () => {
    const key = 'records-test/same-size.zip';
    const file = await storedFile('the release bytes');
    const other = encoder.encode('the RELEASE bytes');
    expect(other.byteLength).toBe(file.size);
    await env.REGISTRY_R2.put(key, other, { customMetadata: { sha256: await sha256Hex(other) } });
    const { progress, steps } = recorder();
    await uploadUnlessStored(env.REGISTRY_R2, key, file, progress, () => {});
    expect(steps).toEqual(['upload thing.zip']);
    expect(await storedText(key)).toBe('the release bytes');
  });

  it('replaces an object whose recorded SHA-256 matches but whose size does not (a truncated leftover)', async () => {
    const key = 'records-test/truncated.zip';
    const file = await storedFile('the release bytes');
    await env.REGISTRY_R2.put(key, file.bytes.slice(0, 5), { customMetadata: { sha256: file.sha256Hex } });
    const { progress, steps } = recorder();
    await uploadUnlessStored(env.REGISTRY_R2, key, file, progress, () => {});
    expect(steps).toEqual(['upload thing.zip']);
    expect(await storedText(key)).toBe('the release bytes');
    expect((await env.REGISTRY_R2.head(key))!.customMetadata).toEqual({ sha256: file.sha256Hex });
  });

  it('runs check() before writing, and writes nothing when it throws', async () => {
    const key = 'records-test/checked.zip';
    const file = await storedFile('the release bytes');
    const { progress } = recorder();
    await expect(
      uploadUnlessStored(env.REGISTRY_R2, key, file, progress, () => {
        throw new Error('lease lost');
      }),
    ).rejects.toThrow('lease lost');
    expect(await env.REGISTRY_R2.head(key)).toBeNull();
  });
});

describe('verifyObject', () => {
  it('accepts a stored object of the recorded size and SHA-256', async () => {
    const key = 'records-test/verify-ok.zip';
    const file = await storedFile('verified bytes');
    await env.REGISTRY_R2.put(key, file.bytes, { customMetadata: { sha256: file.sha256Hex } });
    const { progress, steps } = recorder();
    expect(await verifyObject(env.REGISTRY_R2, key, 'thing.zip', { sha256: file.sha256Hex, size: file.size }, undefined, progress, () => {})).toBe('ok');
    expect(steps).toEqual([]);
  });

  it('reports a stored object of the right size with other bytes, and repairs it when it has the bytes', async () => {
    const key = 'records-test/verify-bytes.zip';
    const file = await storedFile('verified bytes');
    const other = encoder.encode('verified BYTES');
    const otherSha = await sha256Hex(other);
    await env.REGISTRY_R2.put(key, other, { customMetadata: { sha256: otherSha } });
    const want = { sha256: file.sha256Hex, size: file.size };
    const { progress, steps } = recorder();
    expect(await verifyObject(env.REGISTRY_R2, key, 'thing.zip', want, undefined, progress, () => {})).toBe(
      `thing.zip: stored ${file.size} bytes, SHA-256 ${otherSha}; the record says ${file.size} bytes, ${file.sha256Hex}`,
    );
    expect(await storedText(key)).toBe('verified BYTES');
    expect(await verifyObject(env.REGISTRY_R2, key, 'thing.zip', want, file, progress, () => {})).toBe('repaired');
    expect(steps).toEqual([
      `repair thing.zip: stored ${file.size} bytes, SHA-256 ${otherSha}; the record says ${file.size} bytes, ${file.sha256Hex}; uploading it again`,
    ]);
    expect(await storedText(key)).toBe('verified bytes');
  });

  it('reports a stored object of another size even when its recorded SHA-256 matches', async () => {
    const key = 'records-test/verify-size.zip';
    const file = await storedFile('verified bytes');
    await env.REGISTRY_R2.put(key, file.bytes.slice(0, 3), { customMetadata: { sha256: file.sha256Hex } });
    const { progress } = recorder();
    expect(await verifyObject(env.REGISTRY_R2, key, 'thing.zip', { sha256: file.sha256Hex, size: file.size }, undefined, progress, () => {})).toBe(
      `thing.zip: stored 3 bytes, SHA-256 ${file.sha256Hex}; the record says ${file.size} bytes, ${file.sha256Hex}`,
    );
  });

  it('reports a missing object as missing', async () => {
    const { progress } = recorder();
    expect(
      await verifyObject(env.REGISTRY_R2, 'records-test/nothing.zip', 'thing.zip', { sha256: 'a'.repeat(64), size: 1 }, undefined, progress, () => {}),
    ).toBe('thing.zip: missing');
  });
});

describe('commitRecord', () => {
  it('creates the record once; a second commit returns false and leaves the first', async () => {
    const key = 'records-test/record.json';
    expect(await commitRecord(env.REGISTRY_R2, key, { version: '1.0.0', first: true })).toBe(true);
    expect(await commitRecord(env.REGISTRY_R2, key, { version: '1.0.0', first: false })).toBe(false);
    expect(JSON.parse((await storedText(key))!)).toEqual({ version: '1.0.0', first: true });
  });
});
