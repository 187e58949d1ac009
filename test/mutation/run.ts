/**
 * `npm run mutation [-- --only ID,ID] [--json]`: measures whether the tests
 * notice a weakened rule. Each mutant in ./mutants.ts replaces one snippet of
 * one source file (it must occur exactly once, so a stale entry fails loudly
 * instead of testing nothing); the runner applies it to a temporary copy of
 * the working tree (node_modules linked), runs the test files the mutant
 * names, and counts it killed when they go red. Before any mutant, the same
 * test files must be green on the unmutated copy.
 *
 * Prints killed/survived per folder and every survivor with the reason
 * written next to it in mutants.ts. Exit status: 0 when every folder reaches
 * the target (85 % killed), 1 otherwise, 2 when the setup is broken.
 * Not part of `npm test`: it runs the chosen test files once per mutant.
 */
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { MUTANTS, folderOf, type Mutant } from './mutants';

const TARGET = 0.85;
const root = join(import.meta.dirname, '..', '..');
const args = process.argv.slice(2);
const only = args.includes('--only') ? new Set(args[args.indexOf('--only') + 1]!.split(',')) : null;
const json = args.includes('--json');
const log = (line: string) => process.stderr.write(`${line}\n`);

/** Runs vitest on `files` in `dir`; resolves true when it passes. */
function vitest(dir: string, files: readonly string[], timeoutMs = 600_000): Promise<{ passed: boolean; output: string }> {
  const projects = [...new Set(files.map(projectOf))].flatMap((p) => ['--project', p]);
  return new Promise((resolve) => {
    const child = spawn(join(dir, 'node_modules', '.bin', 'vitest'), ['run', '--bail', '1', ...projects, ...files], {
      cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], detached: true, env: { ...process.env, CI: '1' },
    });
    let output = '';
    child.stdout.on('data', (d) => { output += d; });
    child.stderr.on('data', (d) => { output += d; });
    const timer = setTimeout(() => { try { process.kill(-child.pid!, 'SIGKILL'); } catch { /* gone */ } }, timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ passed: code === 0, output });
    });
  });
}

function projectOf(file: string): string {
  if (file.startsWith('test/worker-private/')) return 'worker-private';
  if (file.startsWith('test/worker/') || file.startsWith('test/protocol/')) return 'worker';
  return 'node';
}

/** A copy of the working tree (tracked and untracked, not ignored files) with node_modules linked. */
function copyTree(): string {
  const dir = mkdtempSync(join(tmpdir(), 'edge-registry-mutation-'));
  const files = execFileSync('git', ['ls-files', '-co', '--exclude-standard', '-z'], { cwd: root, encoding: 'utf8' }).split('\0').filter(Boolean);
  for (const file of files) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    try { cpSync(join(root, file), join(dir, file)); } catch { /* deleted in the working tree */ }
  }
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  return dir;
}

function apply(dir: string, mutant: Mutant): () => void {
  const path = join(dir, mutant.file);
  const original = readFileSync(path, 'utf8');
  const count = original.split(mutant.from).length - 1;
  if (count !== 1) throw new Error(`mutant ${mutant.id}: the snippet occurs ${count} times in ${mutant.file} (expected once); update test/mutation/mutants.ts`);
  writeFileSync(path, original.replace(mutant.from, () => mutant.to));
  return () => writeFileSync(path, original);
}

async function main(): Promise<number> {
  const mutants = MUTANTS.filter((m) => only === null || only.has(m.id));
  const dir = copyTree();
  try {
    // Every snippet must still be in the source: check them all before spending time on tests.
    for (const mutant of mutants) apply(dir, mutant)();
    const allFiles = [...new Set(mutants.flatMap((m) => m.tests))];
    log(`mutation: ${mutants.length} mutants; first the ${allFiles.length} test files unmutated`);
    const baseline = await vitest(dir, allFiles);
    if (!baseline.passed) {
      log(baseline.output.slice(-4000));
      log('mutation: the unmutated tests fail; fix them first');
      return 2;
    }
    const results: { mutant: Mutant; killed: boolean; seconds: number }[] = [];
    for (const mutant of mutants) {
      const restore = apply(dir, mutant);
      const start = Date.now();
      const run = await vitest(dir, mutant.tests);
      restore();
      const seconds = (Date.now() - start) / 1000;
      results.push({ mutant, killed: !run.passed, seconds });
      log(`${run.passed ? 'SURVIVED' : 'killed  '} ${mutant.id.padEnd(28)} ${seconds.toFixed(0).padStart(4)} s  ${mutant.description}`);
    }
    const folders = [...new Set(results.map((r) => folderOf(r.mutant.file)))];
    const summary = folders.map((folder) => {
      const inFolder = results.filter((r) => folderOf(r.mutant.file) === folder);
      const killed = inFolder.filter((r) => r.killed).length;
      return { folder, mutants: inFolder.length, killed, score: killed / inFolder.length };
    });
    const survivors = results.filter((r) => !r.killed).map((r) => ({ id: r.mutant.id, file: r.mutant.file, description: r.mutant.description, why: r.mutant.survives ?? 'NOT EXPLAINED' }));
    if (json) {
      process.stdout.write(`${JSON.stringify({ target: TARGET, folders: summary, survivors }, null, 2)}\n`);
    } else {
      process.stdout.write('\nfolder                                   killed / mutants   score\n');
      for (const s of summary) process.stdout.write(`${s.folder.padEnd(40)} ${String(s.killed).padStart(6)} / ${String(s.mutants).padEnd(7)}  ${(s.score * 100).toFixed(0).padStart(4)} %${s.score >= TARGET ? '' : '  (below 85 %)'}\n`);
      for (const s of survivors) process.stdout.write(`\nsurvived ${s.id} (${s.file}): ${s.description}\n  why: ${s.why}\n`);
    }
    return summary.every((s) => s.score >= TARGET) ? 0 : 1;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().then((code) => process.exit(code), (error: Error) => {
  log(`mutation: ${error.message}`);
  process.exit(2);
});
