/**
 * Waiting between attempts of a remote call (--remote's KV REST and R2 S3
 * clients): exponential backoff from 200 ms.
 */

/** Waits `ms` milliseconds. */
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** The wait before retry `attempt` (1, 2, …) of a remote call: 200 ms, doubling. */
export const backoff = (attempt: number) => 200 * 2 ** (attempt - 1);
