/**
 * What a CLI publish's logs say about its time (bench/cli-wall.ts): the CLI's own `timing: MS LABEL` marks
 * (EDGE_REGISTRY_TIMING=1, scripts/lib/timing.ts) and wrangler dev's `[wrangler:info]` lines per request; and the
 * shape of its figures.
 */

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

/** A publish API request's name: "POST create", "PUT linux_amd64.zip", "POST commit" (also bench/publish-api.ts's). */
export function requestName(method: string, path: string): string {
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

/** One checkout's medians (bench/cli-wall.ts). */
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
    /** What ran: this checkout's CLI, the baseline's, or `node -e 0` beside the publishes or the help runs. */
    kind: `${'' | 'baseline '}${'publish' | 'help' | 'local publish' | 'local module publish'}` | 'node -e 0' | 'node -e 0 (help)';
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
