import { describe, expect, it } from 'vitest';
import { bytesStream, concatBytes } from '../../src/bytes';

describe('concatBytes', () => {
  it('joins chunks in order into a new buffer of exactly their size (never a view on one of them)', () => {
    const backing = new Uint8Array([9, 1, 2, 3, 9]);
    const joined = concatBytes([backing.subarray(1, 4), new Uint8Array([4]), new Uint8Array(0)]);
    expect([...joined]).toEqual([1, 2, 3, 4]);
    expect(joined.buffer.byteLength).toBe(4);
    joined[0] = 7;
    expect(backing[1]).toBe(1);
    expect(concatBytes([]).byteLength).toBe(0);
    expect([...concatBytes([new Uint8Array([5, 6])], 2)]).toEqual([5, 6]);
  });
});

describe('bytesStream', () => {
  it('hands the bytes on as one chunk (a view, no copy), nothing for no bytes, and native streams take it', async () => {
    const backing = new Uint8Array([9, 1, 2, 3, 9]);
    const chunks: Uint8Array[] = [];
    const reader = bytesStream(backing.subarray(1, 4)).getReader();
    for (let next = await reader.read(); !next.done; next = await reader.read()) chunks.push(next.value);
    expect(chunks.map((c) => [...c])).toEqual([[1, 2, 3]]);
    expect(chunks[0]!.buffer).toBe(backing.buffer);
    const empty = await bytesStream(new Uint8Array(0)).getReader().read();
    expect(empty.done).toBe(true);
    const digest = new crypto.DigestStream('SHA-256');
    await bytesStream(new TextEncoder().encode('abc')).pipeTo(digest);
    expect(Buffer.from(await digest.digest).toString('hex')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});
