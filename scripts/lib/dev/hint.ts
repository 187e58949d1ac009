import { devOrigin } from './server';

/**
 * What `npm start` prints on an empty local state: how to publish a first
 * provider, and the URL to try at the address wrangler dev will serve
 * (`--port N` / `--port=N`, else wrangler's default 8787; https with
 * `--local-protocol https`).
 */
export function emptyStateHint(args: readonly string[]): string {
  return (
    [
      '',
      'edge-registry: the local state is empty, so there is nothing to serve yet. To publish a first provider:',
      '  npm run demo                                         # a generated sample provider, several versions and platforms',
      '  npm run publish-provider -- ./dist --namespace acme  # your own goreleaser dist/',
      `Then open ${devOrigin(args)}/ or try ${devOrigin(args)}/v1/providers/demo/example/versions`,
      '',
    ].join('\n') + '\n'
  );
}
