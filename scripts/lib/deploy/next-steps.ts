/**
 * What to do after a successful deploy: a signing key, a first publish, a
 * read token, and the Terraform configuration that uses them.
 */

/** The text printed after the smoke test passed, for the registry on `hostname` deployed from environment `env`. */
export function nextSteps(hostname: string, env: string, configPath: string): string {
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
`;
}
