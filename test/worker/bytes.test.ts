import { describe, expect, it } from 'vitest';
import { concatBytes } from '../../src/bytes';

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
