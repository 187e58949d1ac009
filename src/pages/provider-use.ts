import type { PageContext } from './context';
import { html, type Html } from './html';
import { snippet } from './layout';
import {
  credentialsSnippet,
  hostBlockSnippet,
  networkMirrorSnippet,
  ociCredentialsSnippet,
  ociMirrorSnippet,
  requiredProvidersSnippet,
  type SnippetAddress,
} from './snippets';

/**
 * A provider page's "Use" (own provider) or "Install" (mirrored) section: the configuration snippets a
 * version page shows (src/pages/providers.ts renders the rest of the page).
 */

/** Where a version page's snippets come from: the address parts and rules render works them out from. */
export interface SnippetFacts {
  hostname: string;
  namespace: string;
  type: string;
  /** The provider is this registry's own (not a mirrored upstream's). */
  own: boolean;
  mirror: boolean;
  /** The source address a configuration uses. */
  source: string;
  constraint: string;
  address: SnippetAddress;
}

/** The "Use"/"Install" section's snippets: required_providers, host block, network mirror, credentials in private mode. */
export function useSnippets(ctx: PageContext, { hostname, namespace, type, own, mirror, source, constraint, address }: SnippetFacts): Html[] {
  const snippets: Html[] = [];
  if (!mirror) {
    snippets.push(
      snippet(
        'snippet-required',
        'Use this provider',
        requiredProvidersSnippet(type, source, constraint),
        html`In your configuration; then run <code>terraform init</code> or <code>tofu init</code>.`,
      ),
    );
    if (own && address.hostBlock) snippets.push(hostBlockSnippet(address));
  }
  snippets.push(
    snippet(
      'snippet-mirror',
      'Install through this network mirror',
      networkMirrorSnippet(address.origin),
      html`In the CLI configuration (<code>~/.terraformrc</code> or <code>TF_CLI_CONFIG_FILE</code>). Through the mirror the configuration keeps ${mirror ? 'the' : 'this'} provider's real address, <code>${hostname}/${namespace}/${type}</code>.${address.https ? '' : html` <strong>Terraform and OpenTofu accept a network mirror only at an <code>https:</code> URL</strong>: serve this instance over HTTPS to use it (<code>npm start -- --local-protocol https …</code>, see the README).`}`,
    ),
  );
  snippets.push(
    snippet(
      'snippet-oci-mirror',
      'Install from the OCI view (OpenTofu ≥ 1.10)',
      ociMirrorSnippet(address.browsedHost, hostname, namespace, type) +
        (ctx.config.access === 'private' ? `\n${ociCredentialsSnippet(address.browsedHost)}` : ''),
      html`In OpenTofu's CLI configuration instead of the network mirror: every version is an OCI image index at <code>${address.browsedHost}/providers/${hostname}/${namespace}/${type}</code>, each platform's layer the zip listed here (its digest is the <code>zh:</code> hash).${ctx.config.access === 'private' ? html` The <code>oci_credentials</code> password is a read token for this namespace.` : ''}`,
    ),
  );
  if (mirror) snippets.push(snippet('snippet-required', 'Configuration', requiredProvidersSnippet(type, source, constraint)));
  if (ctx.config.access === 'private') {
    const blocks = mirror
      ? [{ host: address.browsedHost }]
      : [
          { host: address.sourceHost },
          ...(address.browsedHost === address.sourceHost ? [] : [{ host: address.browsedHost, comment: `the network mirror at ${address.origin}/v1/mirror/` }]),
        ];
    snippets.push(
      snippet(
        'snippet-credentials',
        'Credentials (private registry)',
        credentialsSnippet(blocks),
        html`In the CLI configuration, with a read token for this namespace (<code>npm run token -- create --namespace ${own ? namespace : `${hostname}/${namespace}`}</code>).`,
      ),
    );
  }

  return snippets;
}
