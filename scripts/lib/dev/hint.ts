import { devOrigin } from './server';

/**
 * What `npm start` prints on an empty local state: how to publish a first
 * provider, and the URL to try at the address wrangler dev will serve
 * (`--port N` / `--port=N`, else wrangler's default 8787; https with
 * `--local-protocol https`).
 */
export function emptyStateHint(args: readonly string[]): string {
  return [
    '',
    'edge-registry: the local state is empty, so there is nothing to serve yet. To publish a first provider:',
    '  npm run demo                                         # a generated sample provider, several versions and platforms',
    '  npm run publish-provider -- ./dist --namespace acme  # your own goreleaser dist/',
    `Then open ${devOrigin(args)}/ or try ${devOrigin(args)}/v1/providers/demo/example/versions`,
    '',
  ].join('\n') + '\n';
}

/** The port `wrangler dev ARGS` listens on: the last --port given (as wrangler reads it), else 8787. */
export function devPort(args: readonly string[]): string {
  let port = '8787';
  for (let i = 0; i < args.length; i++) {
    const inline = /^--port=(\d+)$/.exec(args[i]!);
    if (inline) port = inline[1]!;
    else if (args[i] === '--port' && /^\d+$/.test(args[i + 1] ?? '')) port = args[i + 1]!;
  }
  return port;
}
