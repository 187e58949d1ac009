import semver from 'semver';
import { PROVIDERS_V1_PATH } from '../protocol/discovery';
import { MODULES_V1_PATH } from '../protocol/modules-v1';
import { html, type Html } from './html';
import { snippet } from './layout';

/**
 * The configuration snippets pages offer to copy, exactly as they work
 * against this instance (tests feed them to real `terraform init`).
 */

/**
 * The version constraint a page suggests: `~> MAJOR.MINOR` of `version` when
 * it is the newest stable one; `~> MAJOR.MINOR.PATCH` for an older stable
 * version (that version and its patches); `= VERSION` for a prerelease (a
 * constraint only matches a prerelease exactly).
 */
export function suggestedConstraint(version: string, newestStable: string | null): string {
  const parsed = semver.parse(version)!;
  if (parsed.prerelease.length > 0) return `= ${version}`;
  if (version === newestStable) return `~> ${parsed.major}.${parsed.minor}`;
  return `~> ${parsed.major}.${parsed.minor}.${parsed.patch}`;
}

/** A terraform block requiring the provider at `source` (HOST/NAMESPACE/TYPE) with `constraint`. */
export function requiredProvidersSnippet(localName: string, source: string, constraint: string): string {
  return `terraform {
  required_providers {
    ${localName} = {
      source  = "${source}"
      version = "${constraint}"
    }
  }
}
`;
}

/**
 * The one address rule every snippet follows (pages, demo content, hints):
 * a snippet names the host the person is browsing when Terraform can use it
 * as is — it has a dot (Terraform refuses module hosts without one) and the
 * page came over HTTPS (service discovery is HTTPS only). Otherwise it names
 * REGISTRY_HOSTNAME, the hostname the registry's providers and modules are
 * stored under, and adds a CLI `host` block sending that name's services to
 * the origin being browsed (scheme, host and port as in the address bar; a
 * `host` block may use http:). URLs in snippets (the network mirror) always
 * use the browsed origin.
 */
export interface SnippetAddress {
  /** The host in source addresses and in the registry's credentials block. */
  sourceHost: string;
  /** scheme://host[:port] being browsed. */
  origin: string;
  /** host[:port] being browsed: the network mirror's credentials are keyed by it. */
  browsedHost: string;
  /** True when the page came over HTTPS (Terraform accepts a network mirror only there). */
  https: boolean;
  /** The CLI `host` block to add; null when sourceHost is the browsed host. */
  hostBlock: string | null;
}

/** Applies the address rule to the page's URL and the configured REGISTRY_HOSTNAME. */
export function snippetAddress(url: URL, registryHostname: string): SnippetAddress {
  const https = url.protocol === 'https:';
  const asIs = https && url.hostname.includes('.');
  const sourceHost = asIs ? url.host : registryHostname.toLowerCase();
  return { sourceHost, origin: url.origin, browsedHost: url.host, https, hostBlock: asIs ? null : hostBlock(sourceHost, url.origin) };
}

/** CLI configuration sending `hostname`'s registry services to `origin` (overrides service discovery). */
export function hostBlock(hostname: string, origin: string): string {
  return `host "${hostname}" {
  services = {
    "modules.v1"   = "${origin}${MODULES_V1_PATH}"
    "providers.v1" = "${origin}${PROVIDERS_V1_PATH}"
  }
}
`;
}

/** CLI configuration installing every provider through this registry's network mirror at `origin`. */
export function networkMirrorSnippet(origin: string): string {
  return `provider_installation {
  network_mirror {
    url = "${origin}/v1/mirror/"
  }
}
`;
}

/** The elided token placeholder of the credentials snippet. */
export const TOKEN_PLACEHOLDER = 'ert_…';

/**
 * CLI configuration credentials for a private registry, token elided: one
 * block per host Terraform sends the token to (a source address's host, and
 * a network mirror's host and port — Terraform keys mirror credentials by
 * the mirror URL's host), each with an optional comment line.
 */
export function credentialsSnippet(blocks: { host: string; comment?: string }[]): string {
  return blocks
    .map(
      ({ host, comment }) => `${comment ? `# ${comment}\n` : ''}credentials "${host}" {
  token = "${TOKEN_PLACEHOLDER}"
}
`,
    )
    .join('');
}

/** The `host` block as a snippet to copy, saying why it is there (only when the address rule needs one). */
export function hostBlockSnippet(address: SnippetAddress): Html {
  return snippet(
    'snippet-host',
    `CLI configuration for ${address.sourceHost}`,
    address.hostBlock ?? '',
    html`In the CLI configuration (<code>~/.terraformrc</code> or <code>TF_CLI_CONFIG_FILE</code>). You are browsing <code>${address.browsedHost}</code>${address.https ? '' : ' over http'}: Terraform wants a registry hostname with a dot, found over HTTPS, so snippets name <code>${address.sourceHost}</code> (<code>REGISTRY_HOSTNAME</code>) and this block sends it to <code>${address.origin}</code>.`,
  );
}

/**
 * OpenTofu ≥ 1.10's `oci_mirror` installing `hostname/namespace/type` from
 * this registry's OCI view (docs/oci.md) at `ociHost` (host[:port] of the
 * origin: OCI clients always call https://HOST/v2/). The template keeps
 * `${hostname}`, so the same block serves our own and mirrored upstream
 * providers; `direct` stays for every other provider.
 */
export function ociMirrorSnippet(ociHost: string, hostname: string, namespace: string, type: string): string {
  return `provider_installation {
  oci_mirror {
    repository_template = "${ociHost}/providers/\${hostname}/\${namespace}/\${type}"
    include             = ["${hostname}/${namespace}/${type}"]
  }
  direct {
    exclude = ["${hostname}/${namespace}/${type}"]
  }
}
`;
}

/** OpenTofu's `oci_credentials` for this registry's OCI view in private mode: a read token as the password (any user name). */
export function ociCredentialsSnippet(ociHost: string): string {
  return `oci_credentials "${ociHost}" {
  username = "token"
  password = "${TOKEN_PLACEHOLDER}"
}
`;
}

/** A `module` block with an `oci://` source for `version` (OCI tags write `+` as `_`); `local` is the block's name. */
export function ociModuleSnippet(ociHost: string, local: string, namespace: string, name: string, system: string, version: string): string {
  return `module "${local}" {
  source = "oci://${ociHost}/modules/${namespace}/${name}/${system}?tag=${version.replaceAll('+', '_')}"
}
`;
}
