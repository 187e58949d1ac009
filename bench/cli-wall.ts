/**
 * `npm run bench:cli` (`npx tsx bench/cli-wall.ts [--runs N] [--local N] [--baseline DIR] [--profile DIR] [--json]`): the wall
 * time of the CLI as a user runs it (issue 29, "Wall time per publish"). Goal: an API publish of a 1 MiB
 * release against `npm start` in ≤ 0.3 s beyond the process start (the wall of `node -e 0`).
 *
 * What it does, as a user would:
 * - `npm start`'s own entry (`node scripts/run.mjs start --port P --persist-to STATE …`, i.e. wrangler dev) on
 *   a free port and a fresh state directory;
 * - before that, on the same state: `npm run keys -- generate --namespace bench --held-by-registry --type ecc`
 *   (an Ed25519 key the registry holds, sealed under .dev.vars' SIGNING_KEY_SECRET, which `npm start` also
 *   uses) and `npm run token -- create --publish bench` (the publish token);
 * - one 3-platform release per run of 1 MiB: three stored zips of random bytes, each holding the executable
 *   terraform-provider-bench_vVERSION (.exe on Windows) at the top level, and a goreleaser manifest;
 * - one warm-up publish (the Worker's first requests), then N keyless publishes of distinct versions through
 *   `node scripts/run.mjs publish-provider DIST --namespace bench --registry URL --json` (the SHA256SUMS is
 *   signed by the held key), each right after a `node -e 0`, alternating which goes first;
 * - `publish-provider --help` N times, interleaved with `node -e 0` too, and (--local N, default 3) a local
 *   publish into another state directory (`publish-provider DIST --namespace bench --persist-to …`, signed
 *   with a local key): the "~1.7 s per publish-provider run" of the issue; then as many local
 *   `publish-module DIR` of a 1 MiB module directory (the demo module and 1 MiB of random bytes).
 *
 * Per run it prints the wall time and CPU time (user + system) of the child and every process it started,
 * measured by bash's `time` (getrusage of the children, millisecond precision), and the 1-minute load
 * average. The publishes run with EDGE_REGISTRY_TIMING=1 (scripts/lib/timing.ts), so the CLI writes
 * `timing: MS LABEL` marks (ms since its process started): the bench splits each publish into the time to
 * the first request, each request's round trip (sent → response headers) and the time after the last answer.
 * `--profile DIR` passes `--cpu-prof --cpu-prof-dir DIR` to the publishes' node. `--baseline DIR` runs the CLI of
 * another checkout (e.g. `git worktree add --detach ../base OLD` with node_modules linked) in the same rounds,
 * on the same server, so before and after are measured in the same minutes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomFillSync } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { zipStored } from '../test/fixtures/archives';
import { writeDemoModule } from '../scripts/lib/demo/module';
import { freePort } from '../test/e2e/server';

const root = join(import.meta.dirname, '..');
const NAMESPACE = 'bench';
const TYPE = 'bench';
const RELEASE_BYTES = 1 << 20;
const PLATFORMS = ['linux_amd64', 'darwin_arm64', 'windows_amd64'];
export const GOAL_SECONDS = 0.3;

export interface Timed {
  wall: number;
  cpu: number;
  load: number;
  code: number;
  stdout: string;
  stderr: string;
}

/** A publish's marks (scripts/lib/timing.ts), seconds since its process started. */
export interface Breakdown {
  bundleLoading?: number;
  scriptRunning?: number;
  releaseValidated?: number;
  firstSend: number;
  lastAnswer: number;
  exit: number;
  /** Each request's round trip (s), in the order sent: "POST create", "PUT …_linux_amd64.zip", "POST commit". */
  requests: { name: string; seconds: number }[];
}

/** Runs `command args` under bash's `time`: wall and CPU (user + sys, the child and its descendants) in seconds. */
export function timed(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<Timed> {
  const dir = mkdtempSync(join(tmpdir(), 'edge-registry-cli-wall-run-'));
  const files = { out: join(dir, 'out'), err: join(dir, 'err'), time: join(dir, 'time') };
  const load = loadavg()[0]!;
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', 'TIMEFORMAT="%3R %3U %3S"; { time "$@" >"$OUT" 2>"$ERR"; } 2>"$TIME"', 'bash', command, ...args], {
      cwd: root,
      env: { ...env, OUT: files.out, ERR: files.err, TIME: files.time },
      stdio: 'ignore',
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      try {
        const [wall, user, sys] = readFileSync(files.time, 'utf8').trim().split(/\s+/).map(Number) as [number, number, number];
        resolve({ wall, cpu: user + sys, load, code: code ?? -1, stdout: readFileSync(files.out, 'utf8'), stderr: readFileSync(files.err, 'utf8') });
      } catch (error) {
        reject(error);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}

/** The environment of every CLI run: nothing from this process's (no signing key, no credential) but PATH and HOME. */
function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: process.env.HOME, NO_COLOR: '1', ...extra };
}

async function cli(name: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<string> {
  const result = await timed(process.execPath, [join(root, 'scripts', 'run.mjs'), name, ...args], cleanEnv(env));
  if (result.code !== 0) throw new Error(`npm run ${name} -- ${args.join(' ')} exited ${result.code}:\n${result.stderr}`);
  return result.stdout;
}

/** A release of version `version` (1 MiB by default): three stored zips of random bytes, and goreleaser's manifest. */
export function writeRelease(dir: string, version: string, releaseBytes = RELEASE_BYTES): string {
  mkdirSync(dir, { recursive: true });
  const overhead = 200; // a stored zip's headers around one entry with a ~40-byte name
  for (const platform of PLATFORMS) {
    const exe = `terraform-provider-${TYPE}_v${version}${platform.startsWith('windows') ? '.exe' : ''}`;
    const zip = zipStored({ [exe]: randomFillSync(Buffer.alloc(Math.floor(releaseBytes / PLATFORMS.length) - overhead)) });
    writeFileSync(join(dir, `terraform-provider-${TYPE}_${version}_${platform}.zip`), zip);
  }
  writeFileSync(join(dir, `terraform-provider-${TYPE}_${version}_manifest.json`), JSON.stringify({ version: 1, metadata: { protocol_versions: ['6.0'] } }));
  return dir;
}

/** The request's name in a breakdown: "POST create", "PUT linux_amd64.zip", "POST commit". */
function requestName(method: string, path: string): string {
  const what = path.endsWith('/commit')
    ? 'commit'
    : method === 'POST'
      ? 'create'
      : path.slice(path.lastIndexOf('/') + 1).replace(/^terraform-provider-[^_]+_[^_]+_/, '');
  return `${method} ${what}`;
}

/**
 * wrangler dev's `[wrangler:info] METHOD PATH STATUS TEXT (N ms)` lines of the publish API, by the version
 * they published (a commit belongs to the version whose files went to the same upload).
 */
export function serverDurations(log: string): Map<string, { name: string; seconds: number }[]> {
  const byVersion = new Map<string, { name: string; seconds: number }[]>();
  const versionOfUpload = new Map<string, string>();
  const commits: { upload: string; seconds: number }[] = [];
  for (const match of log.matchAll(/\[wrangler:info\] (POST|PUT) (\/v1\/publish\/\S+) \d+ [^(\n]*\((\d+)ms\)/g)) {
    const [, method, path, ms] = match as unknown as [string, string, string, string];
    const seconds = Number(ms) / 1000;
    const upload = /^\/v1\/publish\/uploads\/([0-9a-f]+)\//.exec(path)?.[1];
    const version = /\/v1\/publish\/providers\/[^/]+\/[^/]+\/([^/?]+)$/.exec(path)?.[1] ?? /terraform-provider-[^_]+_([^_]+)_/.exec(path)?.[1];
    if (upload && path.endsWith('/commit')) {
      commits.push({ upload, seconds });
      continue;
    }
    if (!version) continue;
    if (upload) versionOfUpload.set(upload, version);
    byVersion.set(version, [...(byVersion.get(version) ?? []), { name: requestName(method, path), seconds }]);
  }
  for (const { upload, seconds } of commits) {
    const version = versionOfUpload.get(upload);
    if (version) byVersion.set(version, [...(byVersion.get(version) ?? []), { name: 'POST commit', seconds }]);
  }
  return byVersion;
}

/** The marks of a run with EDGE_REGISTRY_TIMING=1. */
export function breakdown(stderr: string): Breakdown | null {
  const marks: { ms: number; label: string }[] = [];
  for (const line of stderr.split('\n')) {
    const match = /^timing: ([\d.]+) (.+)$/.exec(line);
    if (match) marks.push({ ms: Number(match[1]), label: match[2]! });
  }
  const at = (label: string) => marks.find((m) => m.label === label)?.ms;
  const sends = marks.filter((m) => m.label.startsWith('send '));
  const answers = marks.filter((m) => m.label.startsWith('answer '));
  const exit = marks.find((m) => m.label.startsWith('exit '));
  if (!sends.length || !answers.length || !exit) return null;
  const requests = sends.map((send) => {
    const [, method, path] = send.label.split(' ') as [string, string, string];
    const answer = answers.find((a) => a.ms >= send.ms && a.label.endsWith(` ${method} ${path}`));
    return { name: requestName(method, path), seconds: answer ? (answer.ms - send.ms) / 1000 : Number.NaN };
  });
  const s = (ms: number | undefined) => (ms === undefined ? undefined : ms / 1000);
  return {
    bundleLoading: s(at('bundle loading')),
    scriptRunning: s(at('script running')),
    releaseValidated: s(at('release validated')),
    firstSend: sends[0]!.ms / 1000,
    lastAnswer: Math.max(...answers.map((a) => a.ms)) / 1000,
    exit: exit.ms / 1000,
    requests,
  };
}

export const median = (values: number[]): number => {
  const sorted = values.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
  if (!sorted.length) return Number.NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

const f = (seconds: number | undefined, digits = 3) => (seconds === undefined || Number.isNaN(seconds) ? '–' : seconds.toFixed(digits));

async function startServer(state: string): Promise<{ origin: string; stop: () => Promise<void>; log: () => string }> {
  const port = await freePort();
  const ownTmp = mkdtempSync(join(tmpdir(), 'edge-registry-cli-wall-wrangler-'));
  // Exactly what `npm start -- ARGS` runs (package.json: node scripts/run.mjs start), in its own process group.
  const child: ChildProcess = spawn(
    process.execPath,
    [
      join(root, 'scripts', 'run.mjs'),
      'start',
      '--port',
      String(port),
      '--ip',
      '127.0.0.1',
      '--persist-to',
      state,
      '--inspector-port',
      String(await freePort()),
      '--show-interactive-dev-session=false',
    ],
    { cwd: root, detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, TMPDIR: ownTmp, WRANGLER_SEND_METRICS: 'false', NO_COLOR: '1' } },
  );
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const group = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // gone already
    }
  };
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      group('SIGTERM');
      const timer = setTimeout(() => group('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(ownTmp, { recursive: true, force: true });
  };
  process.on('exit', () => group('SIGKILL'));
  const origin = `http://localhost:${port}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`npm start exited with ${child.exitCode}:\n${output}`);
    try {
      const response = await fetch(`${origin}/.well-known/terraform.json`, { signal: AbortSignal.timeout(2000) });
      await response.arrayBuffer();
      if (response.status === 200) return { origin, stop, log: () => output };
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`npm start did not answer within 120 s:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

type Kind = CliWallFigures['runs'][number]['kind'];

export interface CliSummary {
  publish: { wall: number; cpu: number; beyond: number; met: boolean };
  help: { wall: number; cpu: number; beyond: number };
  local: { wall: number; cpu: number } | null;
  localModule: { wall: number; cpu: number } | null;
  breakdown: {
    toFirstRequest: number;
    requests: { name: string; seconds: number }[];
    /** The same requests' durations as wrangler dev logged them (the Worker in workerd, behind its proxy). */
    server: { name: string; seconds: number }[];
    /** Their sum, per publish. */
    serverTotal: number;
    /** First request sent → last answer. */
    requestsSpan: number;
    afterLastAnswer: number;
    inProcess: number;
    outsideMarks: number;
  };
}

export interface CliWallFigures {
  date: string;
  commit: string;
  baselineDir: string | null;
  runs: {
    kind:
      | 'publish'
      | 'node -e 0'
      | 'help'
      | 'node -e 0 (help)'
      | 'local publish'
      | 'local module publish'
      | 'baseline publish'
      | 'baseline help'
      | 'baseline local publish'
      | 'baseline local module publish';
    wall: number;
    cpu: number;
    load: number;
    version?: string;
    breakdown?: Breakdown | null;
    /** What wrangler dev logged for each of this publish's requests (its `[wrangler:info] … (N ms)` lines), in seconds. */
    server?: { name: string; seconds: number }[];
  }[];
  node: { wall: number; cpu: number };
  current: CliSummary;
  baseline: CliSummary | null;
  load: { min: number; max: number };
}

export async function benchCliWall(options: {
  runs: number;
  local: number;
  profile?: string;
  /** Another checkout (with node_modules) whose CLI runs interleaved with this one, on the same server. */
  baseline?: string;
  log?: (line: string) => void;
}): Promise<CliWallFigures> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const dir = mkdtempSync(join(tmpdir(), 'edge-registry-cli-wall-'));
  const state = join(dir, 'state');
  const node = process.execPath;
  const run = join(root, 'scripts', 'run.mjs');
  const baseRun = options.baseline ? join(options.baseline, 'scripts', 'run.mjs') : null;
  let server: Awaited<ReturnType<typeof startServer>> | undefined;
  try {
    log(`setting up in ${dir}: a registry-held Ed25519 key and a publish token (the CLI), then npm start`);
    await cli('keys', ['generate', '--namespace', NAMESPACE, '--held-by-registry', '--type', 'ecc', '--persist-to', state]);
    const token = (await cli('token', ['create', '--publish', NAMESPACE, '--namespace-wide', '--name', 'cli-wall', '--persist-to', state]))
      .trimEnd()
      .split('\n')
      .at(-1)!;
    server = await startServer(state);
    log(`npm start answers at ${server.origin}`);

    const versions = [
      '0.0.1',
      ...Array.from({ length: options.runs }, (_, i) => `1.0.${i + 1}`),
      ...(baseRun ? Array.from({ length: options.runs }, (_, i) => `2.0.${i + 1}`) : []),
    ];
    const dists = new Map(versions.map((v) => [v, writeRelease(join(dir, `dist-${v}`), v)]));
    const publishEnv = cleanEnv({ EDGE_REGISTRY_TOKEN: token, EDGE_REGISTRY_TIMING: '1' });
    const nodeFlags = options.profile ? ['--cpu-prof', '--cpu-prof-dir', options.profile] : [];
    const publish = async (version: string, cli = run) => {
      const result = await timed(
        node,
        [...nodeFlags, cli, 'publish-provider', dists.get(version)!, '--namespace', NAMESPACE, '--registry', server!.origin, '--json'],
        publishEnv,
      );
      const status = result.code === 0 ? (JSON.parse(result.stdout) as { status: string }).status : '';
      if (status !== 'published')
        throw new Error(`publish ${version} exited ${result.code} (status "${status}"):\n${result.stderr}\n--- npm start ---\n${server!.log().slice(-3000)}`);
      return result;
    };
    const bare = () => timed(node, ['-e', '0'], cleanEnv());

    const warm = await publish('0.0.1');
    log(`warm-up publish: ${f(warm.wall)} s wall, ${f(warm.cpu)} s CPU (not counted)`);
    const runs: CliWallFigures['runs'] = [];
    const of = (kind: CliWallFigures['runs'][number]['kind'], key: 'wall' | 'cpu') => median(runs.filter((r) => r.kind === kind).map((r) => r[key]));
    log('\nrun  what                   wall (s)  CPU (s)  load  to 1st req  requests (round trips, s)');
    // Each round runs node -e 0, this CLI and the baseline's in a rotating order.
    const rotate = <T extends Kind | 'node'>(items: readonly T[], i: number): T[] => [...items.slice(i % items.length), ...items.slice(0, i % items.length)];
    for (let i = 1; i <= options.runs; i++) {
      for (const which of rotate<'node' | 'publish' | 'baseline publish'>(['node', 'publish', ...(baseRun ? (['baseline publish'] as const) : [])], i)) {
        const version = which === 'baseline publish' ? `2.0.${i}` : `1.0.${i}`;
        const result = which === 'node' ? await bare() : await publish(version, which === 'publish' ? run : baseRun!);
        const b = which === 'node' ? undefined : breakdown(result.stderr);
        runs.push({
          kind: which === 'node' ? 'node -e 0' : which,
          wall: result.wall,
          cpu: result.cpu,
          load: result.load,
          ...(which === 'node' ? {} : { version, breakdown: b }),
        });
        log(
          `${String(i).padStart(3)}  ${(which === 'node' ? 'node -e 0' : `${which === 'publish' ? '' : 'baseline '}publish ${version}`).padEnd(22)} ${f(result.wall).padStart(8)} ${f(result.cpu).padStart(8)} ${result.load.toFixed(1).padStart(5)}` +
            (b ? `  ${f(b.firstSend).padStart(10)}  ${b.requests.map((r) => `${r.name} ${f(r.seconds)}`).join(', ')}` : ''),
        );
      }
    }
    for (let i = 1; i <= options.runs; i++) {
      for (const which of rotate<'node' | 'help' | 'baseline help'>(['node', 'help', ...(baseRun ? (['baseline help'] as const) : [])], i)) {
        const result = which === 'node' ? await bare() : await timed(node, [which === 'help' ? run : baseRun!, 'publish-provider', '--help'], cleanEnv());
        runs.push({ kind: which === 'node' ? 'node -e 0 (help)' : which, wall: result.wall, cpu: result.cpu, load: result.load });
      }
    }
    if (options.local > 0) {
      const localState = join(dir, 'local-state');
      const keysDir = join(dir, 'keys');
      await cli('keys', ['generate', '--namespace', NAMESPACE, '--type', 'ecc', '--persist-to', localState, '--keys-dir', keysDir]);
      for (let i = 1; i <= Math.min(options.local, options.runs); i++) {
        for (const which of rotate<'local publish' | 'baseline local publish'>(
          ['local publish', ...(baseRun ? (['baseline local publish'] as const) : [])],
          i,
        )) {
          const version = which === 'local publish' ? `1.0.${i}` : `2.0.${i}`;
          const result = await timed(
            node,
            [
              which === 'local publish' ? run : baseRun!,
              'publish-provider',
              dists.get(version)!,
              '--namespace',
              NAMESPACE,
              '--persist-to',
              localState,
              '--keys-dir',
              keysDir,
            ],
            cleanEnv(),
          );
          if (result.code !== 0) throw new Error(`${which} exited ${result.code}:\n${result.stderr}`);
          runs.push({ kind: which, wall: result.wall, cpu: result.cpu, load: result.load });
          log(`${which} ${version}: ${f(result.wall)} s wall, ${f(result.cpu)} s CPU, load ${result.load.toFixed(1)}`);
        }
      }
      for (let i = 1; i <= Math.min(options.local, options.runs); i++) {
        for (const which of rotate<'local module publish' | 'baseline local module publish'>(
          ['local module publish', ...(baseRun ? (['baseline local module publish'] as const) : [])],
          i,
        )) {
          const version = which === 'local module publish' ? `1.0.${i}` : `2.0.${i}`;
          const module = join(dir, `module-${version}`);
          writeDemoModule(module, version);
          mkdirSync(join(module, 'files'));
          writeFileSync(join(module, 'files', 'data.bin'), randomFillSync(Buffer.alloc(RELEASE_BYTES)));
          const args = [
            'publish-module',
            module,
            '--namespace',
            NAMESPACE,
            '--name',
            'bench',
            '--system',
            'aws',
            '--version',
            version,
            '--persist-to',
            localState,
          ];
          const result = await timed(node, [which === 'local module publish' ? run : baseRun!, ...args], cleanEnv());
          if (result.code !== 0) throw new Error(`${which} exited ${result.code}:\n${result.stderr}`);
          runs.push({ kind: which, wall: result.wall, cpu: result.cpu, load: result.load });
          log(`${which} ${version}: ${f(result.wall)} s wall, ${f(result.cpu)} s CPU, load ${result.load.toFixed(1)}`);
        }
      }
    }

    // Let wrangler dev's last log lines arrive, then give each publish its requests' server-side durations.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const logged = serverDurations(server.log());
    for (const r of runs) if (r.version) r.server = logged.get(r.version) ?? [];
    const summary = (prefix: '' | 'baseline '): CliSummary => {
      const publishes = runs.filter((r) => r.kind === `${prefix}publish` && r.breakdown);
      const names = [...new Set(publishes.flatMap((r) => r.breakdown!.requests.map((q) => q.name)))];
      const wall = of(`${prefix}publish`, 'wall');
      const local = of(`${prefix}local publish`, 'wall');
      const localModule = of(`${prefix}local module publish`, 'wall');
      return {
        publish: { wall, cpu: of(`${prefix}publish`, 'cpu'), beyond: wall - of('node -e 0', 'wall'), met: wall - of('node -e 0', 'wall') <= GOAL_SECONDS },
        help: { wall: of(`${prefix}help`, 'wall'), cpu: of(`${prefix}help`, 'cpu'), beyond: of(`${prefix}help`, 'wall') - of('node -e 0 (help)', 'wall') },
        local: Number.isNaN(local) ? null : { wall: local, cpu: of(`${prefix}local publish`, 'cpu') },
        localModule: Number.isNaN(localModule) ? null : { wall: localModule, cpu: of(`${prefix}local module publish`, 'cpu') },
        breakdown: {
          toFirstRequest: median(publishes.map((r) => r.breakdown!.firstSend)),
          requests: names.map((name) => ({
            name,
            seconds: median(publishes.map((r) => r.breakdown!.requests.find((q) => q.name === name)?.seconds ?? Number.NaN)),
          })),
          server: names.map((name) => ({ name, seconds: median(publishes.map((r) => r.server?.find((q) => q.name === name)?.seconds ?? Number.NaN)) })),
          serverTotal: median(publishes.map((r) => (r.server ?? []).reduce((sum, q) => sum + q.seconds, 0))),
          requestsSpan: median(publishes.map((r) => r.breakdown!.lastAnswer - r.breakdown!.firstSend)),
          afterLastAnswer: median(publishes.map((r) => r.breakdown!.exit - r.breakdown!.lastAnswer)),
          inProcess: median(publishes.map((r) => r.breakdown!.exit)),
          outsideMarks: median(publishes.map((r) => r.wall - r.breakdown!.exit)),
        },
      };
    };
    const figures: CliWallFigures = {
      date: new Date().toISOString(),
      commit: await gitHead(),
      baselineDir: options.baseline ?? null,
      runs,
      node: { wall: of('node -e 0', 'wall'), cpu: of('node -e 0', 'cpu') },
      current: summary(''),
      baseline: baseRun ? summary('baseline ') : null,
      load: { min: Math.min(...runs.map((r) => r.load)), max: Math.max(...runs.map((r) => r.load)) },
    };
    return figures;
  } finally {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function gitHead(): Promise<string> {
  const result = await timed('git', ['rev-parse', '--short', 'HEAD'], cleanEnv());
  return result.stdout.trim();
}

export function cliWallReport(figures: CliWallFigures): string {
  const { node, load } = figures;
  const lines = [
    `CLI wall time (${figures.date}, commit ${figures.commit}, load average ${load.min.toFixed(1)}–${load.max.toFixed(1)}; medians; node -e 0: ${f(node.wall)} s wall, ${f(node.cpu)} s CPU)`,
  ];
  for (const [label, summary] of [
    ['this checkout', figures.current],
    [`baseline (${figures.baselineDir})`, figures.baseline],
  ] as const) {
    if (!summary) continue;
    const { publish, help, local, localModule, breakdown: b } = summary;
    lines.push(
      `${label}:`,
      `  API publish, 1 MiB keyless:   ${f(publish.wall)} s wall, ${f(publish.cpu)} s CPU; ${f(publish.beyond)} s beyond node -e 0 (goal ≤ ${GOAL_SECONDS} s: ${publish.met ? 'MET' : 'NOT MET'})`,
      `  its marks (s):                first request sent at ${f(b.toFirstRequest)}; requests ${f(b.requestsSpan)} (${b.requests.map((r) => `${r.name} ${f(r.seconds)}`).join(', ')});` +
        ` last answer → exit ${f(b.afterLastAnswer)}; exit at ${f(b.inProcess)}, wall − exit ${f(b.outsideMarks)}`,
      `  wrangler dev's own log (s):   ${f(b.serverTotal)} in all (${b.server.map((r) => `${r.name} ${f(r.seconds)}`).join(', ')})`,
      `  publish-provider --help:      ${f(help.wall)} s wall, ${f(help.cpu)} s CPU (${f(help.beyond)} s beyond node -e 0)`,
    );
    if (local) lines.push(`  local publish (--persist-to): ${f(local.wall)} s wall, ${f(local.cpu)} s CPU`);
    if (localModule) lines.push(`  local publish-module (1 MiB): ${f(localModule.wall)} s wall, ${f(localModule.cpu)} s CPU`);
  }
  return lines.join('\n');
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({
    options: {
      runs: { type: 'string', default: '8' },
      local: { type: 'string', default: '3' },
      profile: { type: 'string' },
      baseline: { type: 'string' },
      json: { type: 'boolean' },
    },
  });
  const figures = await benchCliWall({ runs: Number(values.runs), local: Number(values.local), profile: values.profile, baseline: values.baseline });
  if (values.json) process.stdout.write(`${JSON.stringify(figures)}\n`);
  else process.stdout.write(`\n${cliWallReport(figures)}\n`);
}
