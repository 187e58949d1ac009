import semver from 'semver';

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

/** CLI configuration installing every provider through this registry's network mirror. */
export function networkMirrorSnippet(host: string): string {
  return `provider_installation {
  network_mirror {
    url = "https://${host}/v1/mirror/"
  }
}
`;
}

/** The elided token placeholder of the credentials snippet. */
export const TOKEN_PLACEHOLDER = 'ert_…';

/** CLI configuration credentials for a private registry, token elided. */
export function credentialsSnippet(host: string): string {
  return `credentials "${host}" {
  token = "${TOKEN_PLACEHOLDER}"
}
`;
}
