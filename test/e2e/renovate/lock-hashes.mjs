// Run with Renovate's own Node (test/renovate): `node lock-hashes.mjs RENOVATE_DIST CACHE_DIR REGISTRY_URL PACKAGE VERSION`.
// What Renovate's Terraform lock-file update does for a provider version, through Renovate 44's own modules: the
// versions from the terraform-provider datasource (service discovery, then providers.v1's versions list), then
// TerraformProviderHash.createHashes (every platform's download document, each archive downloaded and hashed: h1,
// and the SHA256SUMS: zh). Prints {"versions": [...], "hashes": [...]} on stdout.
const [dist, cacheDir, registryUrl, packageName, version] = process.argv.slice(2);
const { GlobalConfig } = await import(`${dist}/config/global.js`);
GlobalConfig.set({ cacheDir });
const { TerraformProviderDatasource } = await import(`${dist}/modules/datasource/terraform-provider/index.js`);
const { TerraformProviderHash } = await import(`${dist}/modules/manager/terraform/lockfile/hash.js`);
const releases = await new TerraformProviderDatasource().getReleases({ packageName, registryUrl });
const hashes = await TerraformProviderHash.createHashes(registryUrl, packageName, version);
process.stdout.write(`${JSON.stringify({ versions: releases?.releases.map((r) => r.version) ?? null, hashes })}\n`);
