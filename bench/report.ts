/** What every bench shares: medians, text tables, running a bench file as a script, and `npm run bench`'s summary. */
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { withWebSocket } from './worker-cpu';

/** The median of `values` (NaN ignored; the mean of the middle two for an even count); NaN when there is none. */
export function median(values: readonly number[]): number {
  const sorted = values.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
  if (!sorted.length) return Number.NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Columns padded to their widest cell: the first `left` columns left-aligned, the others right-aligned. */
export function textTable(head: readonly string[], body: readonly (readonly string[])[], left = 1): string {
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]) => cells.map((c, i) => (i < left ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(head), ...body.map(line)].join('\n');
}

/** A Markdown table (as bench/README.md and docs/ hold them): the first `left` columns left-aligned, the others right-aligned. */
export function markdownTable(head: readonly string[], body: readonly (readonly (string | number)[])[], left = 1): string {
  const line = (cells: readonly (string | number)[]) => `| ${cells.join(' | ')} |`;
  return [line(head), line(head.map((_, i) => (i < left ? '---' : '---:'))), ...body.map(line)].join('\n');
}

/** The 1-, 5- and 15-minute load averages, as the benches print them ("2.1 1.8 1.5"). */
export const loadAverages = (loads: readonly number[] = loadavg()): string => loads.map((l) => l.toFixed(1)).join(' ');

/** `--NAME=VALUE` or `--NAME VALUE` on the command line; undefined without it. */
export function option(name: string): string | undefined {
  const argv = process.argv.slice(2);
  const at = argv.indexOf(`--${name}`);
  return at !== -1 ? argv[at + 1] : argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
}

/** `--NAME` is on the command line. */
export const flag = (name: string): boolean => process.argv.includes(`--${name}`);

/** Prints bench progress on stderr. */
export const log = (line: string): void => void process.stderr.write(`bench: ${line}\n`);

/**
 * Runs `main` with a scratch directory (removed after) when the module of `meta` is the one node started (a bench
 * file run on its own); with `inspector`, in a Node with a global WebSocket (worker-cpu.ts `withWebSocket`). An
 * error is printed and the exit code set to 1.
 */
export async function script(meta: ImportMeta, name: string, main: (work: string) => Promise<void>, options: { inspector?: boolean } = {}): Promise<void> {
  if (!process.argv[1] || meta.url !== pathToFileURL(process.argv[1]).href) return;
  if (options.inspector) await withWebSocket();
  const work = await mkdtemp(join(tmpdir(), `edge-registry-bench-${name}-`));
  try {
    await main(work);
  } catch (error) {
    process.stderr.write(`bench/${name}: ${(error as Error)?.stack ?? String(error)}\n`);
    process.exitCode = 1;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** A figure against its target, reported as met or missed (never a failure). */
export interface Target {
  name: string;
  value: number;
  target: string;
  met: boolean;
  /** Why the figure may not mean what it says. */
  note?: string;
}

/** Every target as a line: met or MISSED, the figure and its target. */
export function targetLines(targets: readonly Target[]): string[] {
  return targets.map((t) => `  ${t.met ? 'met    ' : 'MISSED '}  ${t.name}: ${t.value} (target ${t.target})${t.note ? ` — ${t.note}` : ''}`);
}
