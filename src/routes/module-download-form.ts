/**
 * Which answer "download a specific version" (modules.v1) gives a client.
 *
 * OpenTofu 1.12 reads a 200 JSON body `{"location": URL,
 * "use_registry_credentials": true}` and then fetches the package itself,
 * sending the registry's credentials (opentofu internal/registry/client.go:
 * ModulePackageLocation, InstallModulePackage; the field must be a JSON
 * boolean, and a 200 body takes precedence over X-Terraform-Get). Terraform
 * and older OpenTofu hand the location to go-getter without credentials, so
 * they must keep getting `204` + `X-Terraform-Get` (a signed URL in private
 * mode). The request carries no opt-in header: OpenTofu identifies itself
 * only by its User-Agent, `OpenTofu/VERSION` (internal/httpclient/useragent.go;
 * X-Terraform-Version holds the same number, but Terraform sends that header
 * too). So the rule: a User-Agent whose product is `OpenTofu/` with a version
 * ≥ 1.12.0 (its prereleases included) gets the JSON form; every other client
 * (including an OpenTofu whose User-Agent was replaced with
 * OPENTOFU_USER_AGENT) gets the header form, which every client understands.
 * Responses vary on User-Agent.
 */

const OPENTOFU = /(?:^|\s)OpenTofu\/v?(\d+)\.(\d+)/;

/** True when the client reads the JSON form with use_registry_credentials (OpenTofu ≥ 1.12). */
export function wantsDirectModuleDownload(userAgent: string | null): boolean {
  const match = OPENTOFU.exec(userAgent ?? '');
  if (!match) return false;
  const [major, minor] = [Number(match[1]), Number(match[2])];
  return major > 1 || (major === 1 && minor >= 12);
}

/** The JSON body of the direct form (use_registry_credentials is a JSON true, as OpenTofu requires). */
export function directModuleDownloadBody(location: string): string {
  return JSON.stringify({ location, use_registry_credentials: true });
}
