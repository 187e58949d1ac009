import { createServer, request as httpRequest, type Server } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * An HTTP proxy on loopback that gives a dotted registry name to a local
 * server, for clients that derive the registry from a source address
 * (Renovate: HOST/NS/TYPE → https://HOST, port 443). `CONNECT HOST:443` for a
 * routed name is tunnelled to the local port; plain-HTTP requests in absolute
 * form (the forge stand-in on 127.0.0.1) are forwarded. Every other host is
 * refused (502) and everything asked for is recorded, so a test can assert
 * that the client asked no host but ours.
 */
export interface RoutingProxy {
  /** http://127.0.0.1:PORT, for HTTPS_PROXY / HTTP_PROXY. */
  url: string;
  /** Every host:port asked for (CONNECT targets and plain-HTTP hosts), in order. */
  requested: string[];
  /** The requested targets that were refused (not routed). */
  refused: string[];
  close(): Promise<void>;
}

/** `routes`: "HOST:443" → local port. Plain HTTP is forwarded only to 127.0.0.1. */
export async function startRoutingProxy(routes: Record<string, number>): Promise<RoutingProxy> {
  const requested: string[] = [];
  const refused: string[] = [];
  const sockets = new Set<import('node:stream').Duplex>();
  const server: Server = createServer((req, res) => {
    // Plain HTTP through a proxy: the request line carries an absolute URL.
    let target: URL;
    try {
      target = new URL(req.url ?? '');
    } catch {
      res.writeHead(400).end('absolute URL expected');
      return;
    }
    requested.push(target.host);
    if (target.hostname !== '127.0.0.1') {
      refused.push(target.host);
      res.writeHead(502).end(`not routed: ${target.host}`);
      return;
    }
    const upstream = httpRequest(
      { host: '127.0.0.1', port: target.port, path: target.pathname + target.search, method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  server.on('connect', (req, client, head) => {
    const target = req.url ?? '';
    requested.push(target);
    const port = routes[target.toLowerCase()];
    if (port === undefined) {
      refused.push(target);
      client.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
      return;
    }
    const upstream = connect(port, '127.0.0.1', () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    sockets.add(upstream);
    sockets.add(client);
    upstream.on('close', () => sockets.delete(upstream));
    client.on('close', () => sockets.delete(client));
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requested,
    refused,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
