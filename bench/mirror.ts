/**
 * `npm run bench:mirror [-- --quick] [-- --json]`: figures for `npm run mirror -- sync`.
 *
 * A local upstream (node:https, its own CA) serves 3 versions × 3 platforms
 * of incompressible 50 MB archives (10 MB with --quick); the real CLI syncs
 * them into a fresh local state. Reported: wall time and throughput of the
 * first sync against the floor of fetching the same bytes with curl to disk;
 * peak RSS of the CLI's process tree (node + the local store's workerd); the
 * no-op re-run's time; and the peak RSS of syncing one 200 MB archive (50 MB
 * with --quick), which must not grow with the archive (it is streamed).
 */
import { execFile, spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { StaticUpstream } from '../test/scripts/mirror/upstream';
import { rssBytes } from './proc';
import { flag, script } from './report';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..');
const quick = flag('quick');
const json = flag('json');
const MB = 1e6;
const archiveBytes = (quick ? 10 : 50) * 1024 * 1024;
const bigBytes = (quick ? 50 : 200) * 1024 * 1024;
const PLATFORMS = ['linux_amd64', 'darwin_arm64', 'windows_amd64'];

/** Every descendant pid of `pid` (the CLI's node and the workerd it starts). */
function tree(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // gone
    }
  }
  const all = [pid];
  for (let i = 0; i < all.length; i++) all.push(...(children.get(all[i]!) ?? []));
  return all;
}

async function sync(
  upstream: StaticUpstream,
  state: string,
  version: string,
  platforms = PLATFORMS,
): Promise<{ seconds: number; peakRssMb: number; nodeRssMb: number; archives: number }> {
  const before = upstream.archiveRequests();
  const started = performance.now();
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      join(root, 'scripts', 'mirror.ts'),
      'sync',
      `${upstream.host}/acme/thing`,
      '--version',
      version,
      ...platforms.flatMap((p) => ['--platform', p]),
      '--persist-to',
      state,
    ],
    {
      cwd: root,
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, NODE_EXTRA_CA_CERTS: upstream.caPath, TF_CLI_CONFIG_FILE: '/dev/null' },
    },
  );
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  let peak = 0;
  let nodePeak = 0;
  const sample = () => {
    let total = 0;
    for (const pid of tree(child.pid!)) {
      try {
        const rss = rssBytes(pid);
        total += rss;
        if (pid === child.pid) nodePeak = Math.max(nodePeak, rss);
      } catch {
        // exited
      }
    }
    peak = Math.max(peak, total);
  };
  const timer = setInterval(sample, 25);
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  clearInterval(timer);
  if (code !== 0) throw new Error(`mirror sync exited ${code}:\n${stderr}`);
  return { seconds: (performance.now() - started) / 1000, peakRssMb: peak / MB, nodeRssMb: nodePeak / MB, archives: upstream.archiveRequests() - before };
}

async function main(dir: string): Promise<void> {
  const versions = ['1.0.0', '1.1.0', '1.2.0'];
  const upstream = await StaticUpstream.start({
    namespace: 'acme',
    type: 'thing',
    releases: [
      ...versions.map((version) => ({ version, platforms: PLATFORMS, padding: archiveBytes })),
      { version: '9.0.0', platforms: ['linux_amd64'], padding: bigBytes },
    ],
  });
  try {
    await writeFile(join(dir, 'wrangler-state-marker'), '');
    // Floor: the same 9 archives fetched with curl to disk, 4 at a time (the CLI's default concurrency).
    const urls = versions.flatMap((v) => PLATFORMS.map((p) => `${upstream.origin}/files/terraform-provider-thing_${v}_${p}.zip`));
    const floorStart = performance.now();
    for (let i = 0; i < urls.length; i += 4) {
      await Promise.all(urls.slice(i, i + 4).map((url, j) => run('curl', ['-sf', '--cacert', upstream.caPath, '-o', join(dir, `floor-${i + j}.zip`), url])));
    }
    const floorSeconds = (performance.now() - floorStart) / 1000;
    const totalMb = (urls.length * archiveBytes) / MB;

    const state = join(dir, 'state');
    const first = await sync(upstream, state, '~> 1.0');
    const again = await sync(upstream, state, '~> 1.0');
    const big = await sync(upstream, join(dir, 'state-big'), '9.0.0', ['linux_amd64']);
    const figures = {
      archives: `${versions.length} versions × ${PLATFORMS.length} platforms × ${(archiveBytes / MB).toFixed(0)} MB`,
      first_sync_seconds: first.seconds,
      first_sync_mb_per_second: totalMb / first.seconds,
      floor_curl_mb_per_second: totalMb / floorSeconds,
      first_sync_peak_rss_mb: first.peakRssMb,
      first_sync_node_peak_rss_mb: first.nodeRssMb,
      noop_rerun_seconds: again.seconds,
      noop_rerun_archive_requests: again.archives,
      big_archive: `1 platform × ${(bigBytes / MB).toFixed(0)} MB`,
      big_sync_seconds: big.seconds,
      big_sync_peak_rss_mb: big.peakRssMb,
      big_sync_node_peak_rss_mb: big.nodeRssMb,
      loadavg_1m: loadavg()[0],
    };
    if (json) {
      process.stdout.write(`${JSON.stringify(figures)}\n`);
    } else {
      for (const [name, value] of Object.entries(figures)) {
        process.stdout.write(`${name.padEnd(32)} ${typeof value === 'number' ? value.toFixed(2) : value}\n`);
      }
    }
  } finally {
    await upstream.stop();
  }
}

await script(import.meta, 'mirror', main);
