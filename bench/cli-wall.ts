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
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { breakdown, serverDurations, type CliSummary, type CliWallFigures } from './cli-marks';
import { timed, type Timed } from './proc';
import { median } from './report';
import { startNpmStart } from './runtime';
import { writeModule, writeRelease } from './seed';

const root = join(import.meta.dirname, '..');
const NAMESPACE = 'bench';
export const GOAL_SECONDS = 0.3;

/** The environment of every CLI run: nothing from this process's (no signing key, no credential) but PATH and HOME. */
function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: process.env.HOME, NO_COLOR: '1', ...extra };
}

async function cli(name: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<string> {
  const result = await timed(process.execPath, [join(root, 'scripts', 'run.mjs'), name, ...args], cleanEnv(env));
  if (result.code !== 0) throw new Error(`npm run ${name} -- ${args.join(' ')} exited ${result.code}:\n${result.stderr}`);
  return result.stdout;
}

const f = (seconds: number | undefined, digits = 3) => (seconds === undefined || Number.isNaN(seconds) ? '–' : seconds.toFixed(digits));

type Kind = CliWallFigures['runs'][number]['kind'];

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
  let server: Awaited<ReturnType<typeof startNpmStart>> | undefined;
  try {
    log(`setting up in ${dir}: a registry-held Ed25519 key and a publish token (the CLI), then npm start`);
    await cli('keys', ['generate', '--namespace', NAMESPACE, '--held-by-registry', '--type', 'ecc', '--persist-to', state]);
    const token = (await cli('token', ['create', '--publish', NAMESPACE, '--namespace-wide', '--name', 'cli-wall', '--persist-to', state]))
      .trimEnd()
      .split('\n')
      .at(-1)!;
    server = await startNpmStart(state);
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
    const of = (kind: Kind, key: 'wall' | 'cpu') => median(runs.filter((r) => r.kind === kind).map((r) => r[key]));
    const localState = join(dir, 'local-state');
    const keysDir = join(dir, 'keys');
    /** One run of `kind` (a "baseline …" kind runs the baseline's CLI) in round `i`: its version's release or module. */
    const once = (kind: Kind, i: number): Promise<Timed> => {
      const [cli, version] = kind.startsWith('baseline ') ? [baseRun!, `2.0.${i}`] : [run, `1.0.${i}`];
      const what = kind.replace(/^baseline /, '');
      if (what.startsWith('node -e 0')) return bare();
      if (what === 'publish') return publish(version, cli);
      if (what === 'help') return timed(node, [cli, 'publish-provider', '--help'], cleanEnv());
      if (what === 'local publish')
        return timed(
          node,
          [cli, 'publish-provider', dists.get(version)!, '--namespace', NAMESPACE, '--persist-to', localState, '--keys-dir', keysDir],
          cleanEnv(),
        );
      const module = writeModule(join(dir, `module-${version}`), version, 1 << 20);
      const args = ['--namespace', NAMESPACE, '--name', 'bench', '--system', 'aws', '--version', version, '--persist-to', localState];
      return timed(node, [cli, 'publish-module', module, ...args], cleanEnv());
    };
    /**
     * `count` rounds of `kinds` (the baseline's kinds only with --baseline), each round in a rotated order, so that
     * node -e 0, this CLI and the baseline's take turns going first; every run recorded (a publish with its marks).
     */
    const rounds = async (count: number, kinds: Kind[]) => {
      const present = kinds.filter((k) => baseRun || !k.startsWith('baseline '));
      for (let i = 1; i <= count; i++) {
        for (const kind of [...present.slice(i % present.length), ...present.slice(0, i % present.length)]) {
          const result = await once(kind, i);
          if (result.code !== 0) throw new Error(`${kind} exited ${result.code}:\n${result.stderr}`);
          const version = kind.startsWith('baseline ') ? `2.0.${i}` : `1.0.${i}`;
          const b = /^(baseline )?publish$/.test(kind) ? breakdown(result.stderr) : null;
          runs.push({ kind, wall: result.wall, cpu: result.cpu, load: result.load, ...(b ? { version, breakdown: b } : {}) });
          log(
            `${String(i).padStart(3)}  ${kind.padEnd(30)} ${f(result.wall).padStart(8)} ${f(result.cpu).padStart(8)} ${result.load.toFixed(1).padStart(5)}` +
              (b ? `  ${f(b.firstSend).padStart(10)}  ${b.requests.map((r) => `${r.name} ${f(r.seconds)}`).join(', ')}` : ''),
          );
        }
      }
    };
    log('\nrun  what                           wall (s)  CPU (s)  load  to 1st req  requests (round trips, s)');
    await rounds(options.runs, ['node -e 0', 'publish', 'baseline publish']);
    await rounds(options.runs, ['node -e 0 (help)', 'help', 'baseline help']);
    if (options.local > 0) {
      await cli('keys', ['generate', '--namespace', NAMESPACE, '--type', 'ecc', '--persist-to', localState, '--keys-dir', keysDir]);
      await rounds(Math.min(options.local, options.runs), ['local publish', 'baseline local publish']);
      await rounds(Math.min(options.local, options.runs), ['local module publish', 'baseline local module publish']);
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
