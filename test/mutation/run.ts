/**
 * `npm run mutation [-- --only ID,ID] [--folder PATH,PATH] [--list] [--json]`:
 * measures whether the tests notice a weakened rule. Each mutant in
 * ./mutants.ts replaces one snippet of one source file (it must occur exactly
 * once: every stale entry is listed and nothing runs, instead of testing
 * nothing); the runner applies it to a temporary copy of the working tree
 * (node_modules linked) and runs the test files the mutant names.
 *
 * Outcomes, decided from vitest's JSON report, not from its exit status:
 * - killed: at least one test failed, other than by vitest's own test timeout;
 * - survived: every test ran and passed;
 * - timed out: the run exceeded its limit (the runner killed it) or every failed
 *   test failed by timing out; it is re-run once with twice the limit first.
 *   Not a kill: a weakened rule that makes something hang is not caught by an assertion;
 * - error: the run failed without a failing test (a file did not load, a hook
 *   failed, no tests ran, no report): not a kill either; the reason is printed.
 * Before any mutant, the chosen test files must pass on the unmutated copy;
 * each mutant's time limit is 5 × its files' baseline time + 2 minutes.
 *
 * Prints per folder: killed / mutants (the score; timed-out and errored runs
 * count against it), survivors, timeouts and errors, and every survivor with
 * the reason written next to it in mutants.ts. `--list` only checks the
 * snippets and lists the mutants. Exit status: 0 when every folder reaches the
 * target (85 % killed), 1 otherwise, 2 when the setup is broken (stale
 * snippet, failing baseline). Not part of `npm test`: it runs the chosen test
 * files once per mutant.
 */
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { MUTANTS, folderOf, type Mutant } from './mutants';

const TARGET = 0.85;
const root = join(import.meta.dirname, '..', '..');
const args = process.argv.slice(2);
const listOption = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1]!.split(',').filter(Boolean) : null);
const only = listOption('--only');
const folders = listOption('--folder');
const json = args.includes('--json');
const listOnly = args.includes('--list');
const log = (line: string) => process.stderr.write(`${line}\n`);

type Outcome = 'killed' | 'survived' | 'timed out' | 'error';

interface Run {
  outcome: Outcome;
  /** Why: the first failing test and its message, the timeout, or what broke. */
  detail: string;
  seconds: number;
  /** Per test file (relative path): seconds it took, from vitest's report. */
  fileSeconds: Map<string, number>;
}

/** The subset of vitest's JSON reporter output this runner reads. */
interface JsonReport {
  numTotalTests: number;
  numFailedTestSuites: number;
  testResults: {
    name: string;
    status: string;
    message: string;
    startTime: number;
    endTime: number;
    assertionResults: { fullName: string; status: string; failureMessages: string[] }[];
  }[];
}

const VITEST_TIMEOUT = /^Error: (Test|Hook) timed out in \d+ms/;

/** Runs vitest on `files` in `dir` with a JSON report and classifies the run (see the file comment). */
function vitest(dir: string, files: readonly string[], timeoutMs: number): Promise<Run> {
  const projects = [...new Set(files.map(projectOf))];
  // --bail saves time, but in the Workers pool the cancelled run crashes vitest ("Message sent to Worker
  // before initialisation") before it writes its report; there every file runs to the end.
  const bail = projects.every((p) => p === 'node') ? ['--bail', '1'] : [];
  const reportPath = join(dir, '.mutation-report.json');
  rmSync(reportPath, { force: true });
  const start = Date.now();
  return new Promise((resolve) => {
    const child = spawn(
      join(dir, 'node_modules', '.bin', 'vitest'),
      ['run', ...bail, '--reporter', 'json', '--outputFile', reportPath, ...projects.flatMap((p) => ['--project', p]), ...files],
      {
        cwd: dir,
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
        env: { ...process.env, CI: '1' },
      },
    );
    let output = '';
    child.stdout.on('data', (d) => {
      output += d;
    });
    child.stderr.on('data', (d) => {
      output += d;
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* gone */
      }
    }, timeoutMs);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      const seconds = (Date.now() - start) / 1000;
      const tail = () =>
        output
          .replace(/\x1b\[[0-9;]*m/g, '')
          .trim()
          .split('\n')
          .slice(-15)
          .join('\n');
      if (timedOut) {
        resolve({
          outcome: 'timed out',
          detail: `no result within ${(timeoutMs / 1000).toFixed(0)} s; the runner killed vitest`,
          seconds,
          fileSeconds: new Map(),
        });
        return;
      }
      let report: JsonReport;
      try {
        report = JSON.parse(readFileSync(reportPath, 'utf8')) as JsonReport;
      } catch {
        resolve({ outcome: 'error', detail: `vitest exited ${code ?? signal} without a JSON report:\n${tail()}`, seconds, fileSeconds: new Map() });
        return;
      }
      const fileSeconds = new Map(report.testResults.map((r) => [relative(dir, r.name), (r.endTime - r.startTime) / 1000]));
      const failed = report.testResults.flatMap((r) =>
        r.assertionResults
          .filter((a) => a.status === 'failed')
          .map((a) => ({ file: relative(dir, r.name), test: a.fullName, message: (a.failureMessages[0] ?? '').split('\n')[0]!.slice(0, 300) })),
      );
      const asserted = failed.filter((f) => !VITEST_TIMEOUT.test(f.message));
      const first = (list: typeof failed) => `${list[0]!.file} › ${list[0]!.test}: ${list[0]!.message}`;
      if (asserted.length > 0) {
        resolve({ outcome: 'killed', detail: first(asserted), seconds, fileSeconds });
      } else if (failed.length > 0) {
        resolve({ outcome: 'timed out', detail: `only vitest test timeouts: ${first(failed)}`, seconds, fileSeconds });
      } else if (code !== 0 || report.numFailedTestSuites > 0 || report.numTotalTests === 0) {
        const broken = report.testResults.find((r) => r.status === 'failed' && r.message);
        const why = broken
          ? `${relative(dir, broken.name)}: ${broken.message.split('\n')[0]}`
          : report.numTotalTests === 0
            ? 'no tests ran'
            : `vitest exited ${code ?? signal}:\n${tail()}`;
        resolve({ outcome: 'error', detail: `no test failed, yet the run failed: ${why}`, seconds, fileSeconds });
      } else {
        resolve({ outcome: 'survived', detail: `${report.numTotalTests} tests passed`, seconds, fileSeconds });
      }
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
    try {
      cpSync(join(root, file), join(dir, file));
    } catch {
      /* deleted in the working tree */
    }
  }
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  return dir;
}

/** Why `mutant` cannot be applied in `dir` (stale snippet, missing file or test file), or null. */
function staleness(dir: string, mutant: Mutant): string | null {
  const path = join(dir, mutant.file);
  if (!existsSync(path)) return `${mutant.file} does not exist`;
  const count = readFileSync(path, 'utf8').split(mutant.from).length - 1;
  if (count !== 1) return `its snippet occurs ${count} times in ${mutant.file} (expected once)`;
  const missing = mutant.tests.filter((t) => !existsSync(join(dir, t)));
  if (missing.length > 0) return `test file(s) ${missing.join(', ')} do not exist`;
  return null;
}

function apply(dir: string, mutant: Mutant): () => void {
  const path = join(dir, mutant.file);
  const original = readFileSync(path, 'utf8');
  writeFileSync(
    path,
    original.replace(mutant.from, () => mutant.to),
  );
  return () => writeFileSync(path, original);
}

/** 5 × the files' baseline time + 2 minutes (the machine is shared; a real hang still ends). */
function limitFor(mutant: Mutant, baseline: Map<string, number>): number {
  const seconds = mutant.tests.reduce((sum, t) => sum + (baseline.get(t) ?? 60), 0);
  return (5 * seconds + 120) * 1000;
}

async function main(): Promise<number> {
  const mutants = MUTANTS.filter((m) => (only === null || only.includes(m.id)) && (folders === null || folders.some((f) => m.file.startsWith(f))));
  if (only)
    for (const id of only)
      if (!MUTANTS.some((m) => m.id === id)) {
        log(`mutation: no mutant ${id}`);
        return 2;
      }
  if (mutants.length === 0) {
    log('mutation: no mutant matches');
    return 2;
  }
  const dir = copyTree();
  try {
    // Every snippet must still be in the source: check them all before spending time on tests.
    const stale = mutants.map((m) => ({ m, why: staleness(dir, m) })).filter((s) => s.why !== null);
    for (const s of stale) log(`mutation: STALE ${s.m.id}: ${s.why}; update test/mutation/mutants.ts`);
    if (stale.length > 0) return 2;
    if (listOnly) {
      for (const m of mutants) process.stdout.write(`${m.id.padEnd(34)} ${m.file.padEnd(32)} ${m.description}\n`);
      log(`mutation: ${mutants.length} mutants, every snippet found once`);
      return 0;
    }
    const allFiles = [...new Set(mutants.flatMap((m) => m.tests))];
    log(`mutation: ${mutants.length} mutants; first the ${allFiles.length} test files unmutated`);
    const baseline = await vitest(dir, allFiles, 1_800_000);
    if (baseline.outcome !== 'survived') {
      log(`mutation: the unmutated tests do not pass (${baseline.outcome}): ${baseline.detail}`);
      log('mutation: fix them first');
      return 2;
    }
    const results: { mutant: Mutant; run: Run; reran: boolean }[] = [];
    for (const mutant of mutants) {
      const restore = apply(dir, mutant);
      const limit = limitFor(mutant, baseline.fileSeconds);
      let run = await vitest(dir, mutant.tests, limit);
      let reran = false;
      if (run.outcome === 'timed out') {
        log(
          `timed out ${mutant.id} after ${run.seconds.toFixed(0)} s (${run.detail}); re-running once with a ${((2 * limit) / 1000).toFixed(0)} s limit in case the machine was only slow`,
        );
        run = await vitest(dir, mutant.tests, 2 * limit);
        reran = true;
      }
      restore();
      results.push({ mutant, run, reran });
      const label = { killed: 'killed   ', survived: 'SURVIVED ', 'timed out': 'TIMED OUT', error: 'ERROR    ' }[run.outcome];
      log(`${label} ${mutant.id.padEnd(34)} ${run.seconds.toFixed(0).padStart(4)} s  ${mutant.description}`);
      if (run.outcome !== 'survived') log(`          ${run.detail.split('\n').join('\n          ')}`);
    }
    const summary = [...new Set(results.map((r) => folderOf(r.mutant.file)))].map((folder) => {
      const inFolder = results.filter((r) => folderOf(r.mutant.file) === folder);
      const count = (o: Outcome) => inFolder.filter((r) => r.run.outcome === o).length;
      const killed = count('killed');
      return {
        folder,
        mutants: inFolder.length,
        killed,
        survived: count('survived'),
        timedOut: count('timed out'),
        errors: count('error'),
        score: killed / inFolder.length,
      };
    });
    const notKilled = results
      .filter((r) => r.run.outcome !== 'killed')
      .map((r) => ({
        id: r.mutant.id,
        file: r.mutant.file,
        outcome: r.run.outcome,
        description: r.mutant.description,
        why: r.run.outcome === 'survived' ? (r.mutant.survives ?? 'NOT EXPLAINED') : r.run.detail,
      }));
    const reruns = results.filter((r) => r.reran).map((r) => ({ id: r.mutant.id, outcome: r.run.outcome }));
    if (json) {
      process.stdout.write(
        `${JSON.stringify(
          {
            target: TARGET,
            folders: summary,
            notKilled,
            reruns,
            mutants: results.map((r) => ({ id: r.mutant.id, outcome: r.run.outcome, seconds: Math.round(r.run.seconds), detail: r.run.detail })),
          },
          null,
          2,
        )}\n`,
      );
    } else {
      process.stdout.write('\nfolder                                                               killed / mutants  score   survived  timed out  error\n');
      for (const s of summary) {
        process.stdout.write(
          `${s.folder.padEnd(68)} ${String(s.killed).padStart(6)} / ${String(s.mutants).padEnd(7)} ${(s.score * 100).toFixed(0).padStart(4)} %  ${String(s.survived).padStart(8)}  ${String(s.timedOut).padStart(9)}  ${String(s.errors).padStart(5)}${s.score >= TARGET ? '' : '   (below 85 %)'}\n`,
        );
      }
      process.stdout.write(
        `\n${reruns.length} run(s) timed out and were re-run once with twice the limit${reruns.length ? `: ${reruns.map((r) => `${r.id} → ${r.outcome}`).join(', ')}` : ''}\n`,
      );
      for (const s of notKilled) process.stdout.write(`\n${s.outcome} ${s.id} (${s.file}): ${s.description}\n  why: ${s.why}\n`);
    }
    return summary.every((s) => s.score >= TARGET) ? 0 : 1;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (error: Error) => {
    log(`mutation: ${error.message}`);
    process.exit(2);
  },
);
