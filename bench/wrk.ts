import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Null when `wrk` can be started, else what to tell the user (checked before the bench spends time building and seeding). */
export function wrkMissing(): string | null {
  const probe = spawnSync('wrk', ['--version'], { stdio: 'ignore' });
  if (!probe.error) return null;
  const why = (probe.error as NodeJS.ErrnoException).code ?? probe.error.message;
  return `npm run bench needs wrk, the HTTP load generator it measures with, and it is not installed (${why}): install it with "sudo apt-get install wrk" (Debian/Ubuntu; .ci/run does this) or "brew install wrk" (macOS), then run the bench again`;
}

/** One wrk run: throughput and latency percentiles. */
export interface LoadResult {
  requests: number;
  seconds: number;
  rps: number;
  /** Mean latency by Little's law: connections ÷ throughput (a closed loop of `connections` clients): stable, unlike wrk's sampled percentiles. */
  meanMs: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
  /** Lines a script printed as "non-200: STATUS BODY…" (the soak's script reports every such response). */
  non200?: string[];
}

/**
 * Loads `url` with wrk (one thread: on this 2-core machine the second core belongs to workerd) at `connections` for
 * `seconds`, loopback only. `script`: a wrk Lua script (e.g. one that rotates request paths); `headers`: more request
 * headers ("Name: value"), e.g. a bearer token.
 */
export async function wrk(url: string, options: { connections: number; seconds: number; script?: string; headers?: string[] }): Promise<LoadResult> {
  if (!/^http:\/\/127\.0\.0\.1:\d+\//.test(url)) throw new Error(`wrk target ${url} is not on loopback`);
  // Terraform's and OpenTofu's Go HTTP client always sends Accept-Encoding: gzip.
  const args = [`-c${options.connections}`, `-d${options.seconds}s`, ...(options.headers ?? []).flatMap((header) => ['-H', header])];
  if (options.script) args.push('-s', options.script);
  const command = ['-t1', '--timeout', '5s', '--latency', '-H', 'Accept-Encoding: gzip', ...args, url];
  const { stdout } = await run('wrk', command, { timeout: (options.seconds + 30) * 1000 });
  return parseWrk(stdout, options.connections);
}

export function parseWrk(output: string, connections: number): LoadResult {
  const requests = /(\d+) requests in ([\d.]+)(m?s|m)\b/.exec(output);
  if (!requests) throw new Error(`cannot read wrk output:\n${output}`);
  const unit = requests[3]!;
  const seconds = Number(requests[2]) * (unit === 'ms' ? 0.001 : unit === 'm' ? 60 : 1);
  const percentile = (p: string) => {
    const match = new RegExp(`^\\s+${p}%\\s+([\\d.]+)(us|ms|s)\\s*$`, 'm').exec(output);
    if (!match) throw new Error(`no ${p}% latency in wrk output:\n${output}`);
    const value = Number(match[1]);
    return match[2] === 'us' ? value / 1000 : match[2] === 's' ? value * 1000 : value;
  };
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(output)?.[1] ?? 0);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(output);
  const errors = socket ? socket.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0;
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(output)?.[1] ?? Number(requests[1]) / seconds);
  const non200 = [...output.matchAll(/^non-200: (.*)$/gm)].map((m) => m[1]!);
  return {
    ...(non200.length > 0 ? { non200 } : {}),
    requests: Number(requests[1]),
    seconds,
    rps,
    meanMs: (connections / rps) * 1000,
    p50Ms: percentile('50'),
    p99Ms: percentile('99'),
    non2xx,
    errors,
  };
}
