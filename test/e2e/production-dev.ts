import { readFileSync, writeFileSync } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { get } from './http';
import { freePort, startDevServer, type Certificate, type DevServer } from './server';

/**
 * `wrangler dev` with the production harness around the registry Worker (test/fixtures/production/dev-entry.ts)
 * and one HTTPS port per location, for real clients that cannot send a location header (`terraform`): each
 * location's port is a TCP front passing the TLS stream unchanged to the dev server, so the request keeps the
 * front's port in its Host header and the entry maps that port to the location (PRODUCTION_PORTS).
 */
const root = join(import.meta.dirname, '..', '..');
const ENTRY = join(root, 'test', 'fixtures', 'production', 'dev-entry.ts');

/** The project's wrangler.toml with the harness entry as `main` (and AsyncLocalStorage, which the harness uses), without the production environment. */
export function harnessConfig(dir: string): string {
  const shipped = readFileSync(join(root, 'wrangler.toml'), 'utf8');
  const local = shipped.split(/^# `wrangler deploy --env production`/m)[0]!;
  if (!/^main = "src\/index.ts"$/m.test(local)) throw new Error('wrangler.toml: expected main = "src/index.ts"');
  const config = local
    .replace(/^main = "src\/index.ts"$/m, `main = ${JSON.stringify(ENTRY)}`)
    .replace(/^compatibility_date = .*$/m, (line) => `${line}\ncompatibility_flags = ["nodejs_als"]`);
  const path = join(dir, 'wrangler.production-harness.toml');
  writeFileSync(path, config);
  return path;
}

export interface HarnessState {
  plan: string;
  invocations: {
    location: string;
    method: string;
    path: string;
    status: number;
    counts: Record<string, number>;
    exceeded: string | null;
  }[];
  refusedWrites: Record<string, number>;
  daily: { reads: number; writes: number; deletes: number; lists: number };
}

export interface HarnessServer {
  server: DevServer;
  /** Location name → https://localhost:PORT of its front. */
  origins: Record<string, string>;
  state(): Promise<HarnessState>;
  advanceClock(ms: number): Promise<void>;
  stop(): Promise<void>;
}

/** A TCP front on a free port that pipes every connection to `target` on loopback. */
async function tcpFront(target: number): Promise<{ port: number; server: Server; sockets: Set<Socket> }> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = createConnection({ host: '127.0.0.1', port: target });
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const listening = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => resolve(true));
    });
    if (listening) return { port, server, sockets };
    if (attempt > 10) throw new Error('no port for a location front');
  }
}

/** Starts the harnessed dev server on `stateDir` with one front per location (e.g. ['A', 'B', 'C']). */
export async function startHarnessServer(options: {
  stateDir: string;
  dir: string;
  certificate: Certificate;
  locations: string[];
  vars?: Record<string, string>;
  plan?: 'free' | 'paid';
}): Promise<HarnessServer> {
  const port = await freePort();
  const fronts = await Promise.all(options.locations.map(() => tcpFront(port)));
  const ports = options.locations.map((location, i) => `${fronts[i]!.port}=${location}`).join(',');
  let server: DevServer;
  try {
    server = await startDevServer({
      stateDir: options.stateDir,
      port,
      certificate: options.certificate,
      config: harnessConfig(options.dir),
      vars: { ...options.vars, PRODUCTION_PORTS: ports, PRODUCTION_CONTROL: 'on', PRODUCTION_PLAN: options.plan ?? 'free' },
    });
  } catch (error) {
    for (const front of fronts) front.server.close();
    throw error;
  }
  const origins = Object.fromEntries(options.locations.map((location, i) => [location, `https://localhost:${fronts[i]!.port}`]));
  const control = `${server.origin}/__production/`;
  return {
    server,
    origins,
    async state() {
      const response = await get(`${control}state`, { ca: options.certificate.pem });
      if (response.status !== 200) throw new Error(`harness state: ${response.status}`);
      return JSON.parse(response.body.toString('utf8')) as HarnessState;
    },
    async advanceClock(ms: number) {
      const response = await fetchPost(`${control}clock?advance=${ms}`, options.certificate.pem);
      if (response !== 200) throw new Error(`harness clock: ${response}`);
    },
    async stop() {
      for (const front of fronts) {
        for (const socket of front.sockets) socket.destroy();
        await new Promise<void>((resolve) => front.server.close(() => resolve()));
      }
      await server.stop();
    },
  };
}

async function fetchPost(url: string, ca: string): Promise<number> {
  const { request } = await import('node:https');
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', ca }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}
