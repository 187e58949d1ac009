/** bench/cost.ts's entry: the bench Worker (bench/bench-worker.ts), which counts what /__cost/counts reports. */
export { default, DownloadCounter } from './bench-worker';
