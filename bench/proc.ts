import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';

/** Linux /proc readings for the workerd process under test (the bench runs on Linux only). */

const CLOCK_TICKS = 100; // USER_HZ on Linux

/** PIDs of this process's children named `name`. */
export function childPids(name: string, parent = process.pid): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readStat(Number(entry));
    if (stat && stat.ppid === parent && stat.comm === name) pids.push(Number(entry));
  }
  return pids;
}

/** Microseconds of CPU (user + system) the process has used. */
export function cpuMicros(pid: number): number {
  const stat = readStat(pid);
  if (!stat) throw new Error(`process ${pid} is gone`);
  return ((stat.utime + stat.stime) * 1_000_000) / CLOCK_TICKS;
}

/** Resident set size in bytes. */
export function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = /^VmRSS:\s+(\d+) kB/m.exec(status)?.[1];
  if (!kb) throw new Error(`no VmRSS for ${pid}`);
  return Number(kb) * 1024;
}

function readStat(pid: number): { comm: string; ppid: number; utime: number; stime: number } | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // comm is parenthesised and may contain spaces; fields after it are space-separated.
  const close = text.lastIndexOf(')');
  const comm = text.slice(text.indexOf('(') + 1, close);
  const fields = text.slice(close + 2).split(' ');
  // fields[0] is state (field 3); ppid is field 4, utime 14, stime 15.
  return { comm, ppid: Number(fields[1]), utime: Number(fields[11]), stime: Number(fields[12]) };
}

/** Nanoseconds of CPU all threads of the process have used (/proc/PID/task/TID/schedstat; finer than cpuMicros' 10 ms ticks). */
export function cpuNanos(pid: number): number {
  let total = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      total += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // the thread ended meanwhile
    }
  }
  return total;
}

/** A command's run under bash's `time`: wall and CPU seconds, the load average at its start, its exit code and output. */
export interface Timed {
  wall: number;
  cpu: number;
  load: number;
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `command args` under bash's `time`: wall and CPU (user + sys, the child and its descendants) in seconds. */
export function timed(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<Timed> {
  const dir = mkdtempSync(join(tmpdir(), 'edge-registry-cli-wall-run-'));
  const files = { out: join(dir, 'out'), err: join(dir, 'err'), time: join(dir, 'time') };
  const load = loadavg()[0]!;
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', 'TIMEFORMAT="%3R %3U %3S"; { time "$@" >"$OUT" 2>"$ERR"; } 2>"$TIME"', 'bash', command, ...args], {
      cwd: join(import.meta.dirname, '..'),
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
