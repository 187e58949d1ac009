/**
 * What to do after a successful deploy: a signing key, a first publish, a
 * read token, and the Terraform configuration that uses them.
 */

/** The text printed after the smoke test passed, for the registry on `hostname` deployed from environment `env`. */
export function nextSteps(hostname: string, env: string, configPath: string, filesOrigin: string | null = null): string {
  const remote = `--remote --env ${env}${configPath === 'wrangler.toml' ? '' : ` --config ${configPath}`}`;
  const tokenEnv = `TF_TOKEN_${hostname.replace(/-/g, '__').replace(/\./g, '_')}`;
  return `
The registry answers on https://${hostname}. Next:

  # The scripts below write to Cloudflare: they need, in the environment,
  #   CLOUDFLARE_ACCOUNT_ID, CLOUDFLARE_API_TOKEN (Workers KV Storage: Edit)
  #   R2_ACCESS_KEY_ID, R2_SECRET_ACCESS_KEY (an R2 API token: Object Read & Write on the bucket) for publishing

  1. A signing key for your namespace (keep the private key file out of the repository):
       npm run keys -- generate --namespace acme --key-file ~/acme-signing-key.asc ${remote}

  2. Publish a provider (goreleaser's dist/, or --binary OS_ARCH=FILE):
       npm run publish-provider -- ./dist --namespace acme --key-file ~/acme-signing-key.asc ${remote}

  3. A read token (the registry is private):
       npm run token -- create --namespace acme --name laptop --expires 90d ${remote}

  4. Terraform / OpenTofu:
       # ~/.terraformrc (or: export ${tokenEnv}=<token>)
       credentials "${hostname}" {
         token = "<token from step 3>"
       }

       # main.tf
       terraform {
         required_providers {
           acme = { source = "${hostname}/acme/acme" }
         }
       }

       # or install providers through the registry's network mirror (~/.terraformrc;
       # every provider the configuration uses must then be published or mirrored there):
       provider_installation {
         network_mirror { url = "https://${hostname}/v1/mirror/" }
       }

  CI workflows for releasing providers and modules: examples/github-actions/
${filesOrigin ? publicDocumentsSteps(filesOrigin, remote) : ''}`;
}

/** The steps --public-documents leaves to the operator (wrangler cannot do the WAF rule; the domain needs the zone id). */
function publicDocumentsSteps(filesOrigin: string, remote: string): string {
  const domain = new URL(filesOrigin).hostname;
  return `
  Provider metadata and files from ${filesOrigin} (PUBLIC_DOCUMENTS=r2), once, in this order:

  a. Block every object whose name has a segment starting with "." on that domain (records, uploads, audit,
     sealed keys: an R2 custom domain serves every object of its bucket). Dashboard → the zone of ${domain} →
     Security → WAF → Custom rules → Create rule: expression
       (http.host eq "${domain}" and http.request.uri.path contains "/.")
     action Block. Free plans include custom rules.
  b. Attach the domain to the bucket (the zone id: dashboard → the zone → Overview):
       npx wrangler r2 bucket domain add BUCKET --domain ${domain} --zone-id ZONE_ID
  c. Write the static copies of what was published before and check the domain; once the check passes the
     Worker sends clients there (until then it serves provider metadata and files itself):
       npm run static-documents -- ${remote}
  d. Check: curl ${filesOrigin}/.records/ answers 403; within a minute or two the discovery document names
     ${filesOrigin}/v1/providers/…. A network mirror on the files domain: network_mirror { url = "${filesOrigin}/v1/mirror/" }
`;
}
