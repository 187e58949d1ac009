/**
 * Maps `items` through `fn` with at most `limit` calls in flight, keeping
 * the order of `items` in the result. Rejects with the first error `fn`
 * throws (calls already started run to their end; no new one starts after).
 */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  let failed = false;
  const workers = Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, async () => {
    while (next < items.length && !failed) {
      const index = next++;
      try {
        results[index] = await fn(items[index]!, index);
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  });
  await Promise.all(workers);
  return results;
}

/** A function that runs `task` when a slot is free (see limiter). */
export type Limiter = <T>(task: () => Promise<T>) => Promise<T>;

/** Runs at most `n` tasks at once, in call order; each call resolves or rejects as its task does. */
export function limiter(n: number): Limiter {
  let active = 0;
  const queue: (() => void)[] = [];
  return async <T>(task: () => Promise<T>): Promise<T> => {
    if (active >= n) await new Promise<void>((resolve) => queue.push(resolve));
    active++;
    try {
      return await task();
    } finally {
      active--;
      queue.shift()?.();
    }
  };
}

/**
 * Waits for every one of `pending` (started together) to settle, so none is still running when this returns or
 * throws — a write must not land after its caller gave up (and, say, released a lease) — then resolves with their
 * values in order, or rejects with the first failure in the order given. Several storage requests awaited
 * together cost the Worker about half the CPU of the same requests one after another (bench/README.md).
 */
export async function allSettledInOrder<T>(pending: readonly Promise<T>[]): Promise<T[]> {
  const settled = await Promise.allSettled(pending);
  const failed = settled.find((s) => s.status === 'rejected');
  if (failed) throw failed.reason;
  return settled.map((s) => (s as PromiseFulfilledResult<T>).value);
}
