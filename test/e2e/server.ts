import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { get } from './http';

/**
 * Runs the registry as a user would: `wrangler dev` (the binary in
 * node_modules, not npx) on a temp state directory, a port chosen at run
 * time, optionally over HTTPS with a certificate made here. The server gets
 * its own process group, so stopping it also stops wrangler's workerd
 * children; every server still running is stopped when the process exits.
 */
const root = join(import.meta.dirname, '..', '..');
const wrangler = join(root, 'node_modules', '.bin', 'wrangler');
const running = new Set<ChildProcess>();

process.on('exit', () => {
  for (const child of running) killGroup(child, 'SIGKILL');
});

export interface Certificate {
  certPath: string;
  keyPath: string;
  /** PEM of the (self-signed) certificate, to trust it. */
  pem: string;
}

/** A self-signed certificate for localhost and 127.0.0.1, and `hostname` when given (Go's TLS needs the subjectAltName). */
export function makeCertificate(dir: string, hostname?: string): Certificate {
  const certPath = join(dir, 'cert.pem');
  const keyPath = join(dir, 'key.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      keyPath,
      '-out',
      certPath,
      '-days',
      '2',
      '-subj',
      `/CN=${hostname ?? 'localhost'}`,
      '-addext',
      `subjectAltName=${hostname ? `DNS:${hostname},` : ''}DNS:localhost,IP:127.0.0.1`,
    ],
    { stdio: 'pipe' },
  );
  return { certPath, keyPath, pem: readFileSync(certPath, 'utf8') };
}

/**
 * A TCP port that was free a moment ago, for a server another process will
 * bind (wrangler dev, its inspector). It is drawn at random below Linux's
 * ephemeral range (32768–60999): a port the OS hands out itself can be taken
 * by any outgoing connection of the parallel tests before wrangler binds it
 * (CI saw "Address already in use" that way).
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (await canListen(port)) return port;
  }
  throw new Error('no free port found between 20000 and 32000');
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

export interface DevServer {
  /** e.g. http://localhost:PORT or https://localhost:PORT (no trailing slash). */
  origin: string;
  port: number;
  pid: number;
  /** Everything wrangler printed, for failure messages. */
  log(): string;
  stop(): Promise<void>;
}

export async function startDevServer(options: {
  stateDir: string;
  port: number;
  vars?: Record<string, string>;
  certificate?: Certificate;
  /** A wrangler config other than the project's wrangler.toml (test/e2e/production-dev.ts). */
  config?: string;
  /**
   * Exactly `npm start`'s own command (node scripts/run.mjs start, which runs wrangler dev) at its own log level,
   * instead of `wrangler dev --log-level info`, given 120 s to answer (bench/cli-wall.ts).
   */
  npmStart?: boolean;
}): Promise<DevServer> {
  // A free inspector port too: the default (9229) would clash with another dev server.
  const args = [
    '--port',
    String(options.port),
    '--ip',
    '127.0.0.1',
    '--persist-to',
    options.stateDir,
    '--inspector-port',
    String(await freePort()),
    '--show-interactive-dev-session=false',
    ...(options.npmStart ? [] : ['--log-level', 'info']),
  ];
  if (options.config) args.push('--config', options.config);
  for (const [name, value] of Object.entries(options.vars ?? {})) args.push('--var', `${name}:${value}`);
  if (options.certificate) {
    args.push('--local-protocol', 'https', '--https-key-path', options.certificate.keyPath, '--https-cert-path', options.certificate.certPath);
  }
  // Its own temp directory, removed once it has exited: a server that has to be SIGKILLed (it did not stop
  // within 5 s of SIGTERM on a loaded machine) cannot remove Miniflare's miniflare-* folder itself.
  const ownTmp = mkdtempSync(join(tmpdir(), 'edge-registry-wrangler-'));
  const [command, ...first] = options.npmStart ? [process.execPath, join(root, 'scripts', 'run.mjs'), 'start'] : [wrangler, 'dev'];
  const child = spawn(command!, [...first, ...args], {
    cwd: root,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, TMPDIR: ownTmp, WRANGLER_SEND_METRICS: 'false', NO_COLOR: '1' },
  });
  running.add(child);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) =>
    child.on('exit', () => {
      running.delete(child);
      // Its workerd children are in its process group and were stopped with it; give them a moment.
      setTimeout(() => {
        rmSync(ownTmp, { recursive: true, force: true });
        resolve();
      }, 100);
    }),
  );

  const origin = `${options.certificate ? 'https' : 'http'}://localhost:${options.port}`;
  const server: DevServer = {
    origin,
    port: options.port,
    pid: child.pid!,
    log: () => output,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      killGroup(child, 'SIGTERM');
      const timer = setTimeout(() => killGroup(child, 'SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };

  const seconds = options.npmStart ? 120 : 60;
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`wrangler dev exited with ${child.exitCode}:\n${output}`);
    try {
      const response = await get(`${origin}/.well-known/terraform.json`, { ca: options.certificate?.pem, timeoutMs: 2000 });
      if (response.status === 200) return server;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await server.stop();
      throw new Error(`wrangler dev did not answer within ${seconds} s:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    // already gone
  }
}
