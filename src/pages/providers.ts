import semver from 'semver';
import { pathSegment } from '../http/responses';
import { providerAddress, type ProviderAddress } from '../protocol/address';
import { InputError } from '../protocol/errors';
import { newestStable, parseVersion } from '../protocol/version';
import { pagePlatforms, readProviderPage, type PagePlatform, type PageVersion, type ProviderPageData } from '../store/pages/read';
import type { VersionRecord } from '../store/types';
import { canSee, page, type PageContext, type RenderedPage } from './context';
import { sessionName } from './home';
import { html, path, type Html } from './html';
import { layout } from './layout';
import { lifecycleBadges, lifecycleNotes } from './lifecycle';
import { downloadsFact, loadDownloads, platformDownloads, type PageDownloads } from './downloads';
import { providerCounterName } from '../downloads/names';
import { PAGE_SECURITY_HEADERS, redirect } from './respond';
import { provenanceFact } from './provenance';
import { readVersionRecord } from '../store/providers/version-records';
import { storeFromEnv } from '../store/store';
import { snippetAddress, suggestedConstraint } from './snippets';
import { useSnippets } from './provider-use';

/**
 * The provider pages: /providers/NS/TYPE (the newest stable version),
 * /providers/NS/TYPE/VERSION, the armored signing key of a version, and
 * /mirror/HOST/NS/TYPE for any stored hostname. One KV read (the provider's
 * page data) on a cache miss, and the shown version's R2 record (its
 * provenance; its packages when it is older than the newest
 * PAGE_FULL_VERSIONS the page data keeps them for). A provider outside the
 * session's scope is "not found", like one that does not exist.
 */

async function load(ctx: PageContext, address: ProviderAddress): Promise<ProviderPageData> {
  const data = canSee(ctx, address.hostname, address.namespace)
    ? await readProviderPage(ctx.env.REGISTRY_KV, address, ctx.config.listTtlMs, ctx.freshness)
    : null;
  if (data === null)
    throw new InputError(
      `There is no provider ${address.hostname}/${address.namespace}/${address.type} here${ctx.config.access === 'private' ? ' that your token can read' : ''}.`,
      404,
    );
  return data;
}

function ownAddress(ctx: PageContext, params: Record<string, string>): ProviderAddress {
  return providerAddress(ctx.config.hostname, pathSegment(params.namespace, 'namespace'), pathSegment(params.type, 'type'));
}

/** The newest stable version that is not withdrawn (the default page and the suggested constraint). */
function newestListed(data: ProviderPageData): string | null {
  return newestStable(data.versions.filter((v) => !v.withdrawn).map((v) => v.version));
}

/** GET /providers/:namespace/:type — the newest stable version's page; ?version=V redirects to it (the no-JS switcher). */
export const providerPage = page(async (ctx, params) => {
  const address = ownAddress(ctx, params);
  const wanted = ctx.url.searchParams.get('version');
  if (wanted !== null) return redirect(`${path('providers', address.namespace, address.type, parseVersion(wanted))}`);
  const data = await load(ctx, address);
  const newest = newestListed(data);
  const current = data.versions.find((v) => v.version === newest) ?? data.versions.find((v) => !v.withdrawn) ?? data.versions[0]!;
  return renderVersion(ctx, address, data, current);
});

/** GET /providers/:namespace/:type/:version */
export const versionPage = page(async (ctx, params) => {
  const address = ownAddress(ctx, params);
  const version = parseVersion(pathSegment(params.version, 'version'));
  const data = await load(ctx, address);
  const current = data.versions.find((v) => v.version === version);
  if (!current) throw new InputError(`${address.namespace}/${address.type} has no version ${version}.`, 404);
  return renderVersion(ctx, address, data, current);
});

/** GET /mirror/:hostname/:namespace/:type — what the mirror holds of a provider: versions and platforms. */
export const mirrorPage = page(async (ctx, params) => {
  const address = providerAddress(pathSegment(params.hostname, 'hostname'), pathSegment(params.namespace, 'namespace'), pathSegment(params.type, 'type'));
  const data = await load(ctx, address);
  const wanted = ctx.url.searchParams.get('version');
  const newest = wanted === null ? newestListed(data) : null;
  const current =
    wanted === null
      ? (data.versions.find((v) => v.version === newest) ?? data.versions.find((v) => !v.withdrawn) ?? data.versions[0]!)
      : data.versions.find((v) => v.version === parseVersion(wanted));
  if (!current) throw new InputError(`The mirror holds no version ${wanted} of ${address.hostname}/${address.namespace}/${address.type}.`, 404);
  // Mirrored archives are served (and counted) by the same archive route, under their upstream hostname.
  const record = current.platforms ? null : await readVersionRecord(storeFromEnv(ctx.env), address, current.version);
  return render(ctx, data, withPlatforms(current, record), true, await loadDownloads(ctx, providerCounterName(address)));
});

/** GET /providers/:namespace/:type/:version/signing-key.asc — the armored public key that signed that version. */
export const signingKeyFile = page(async (ctx, params) => {
  const address = ownAddress(ctx, params);
  const version = parseVersion(pathSegment(params.version, 'version'));
  const data = await load(ctx, address);
  const keyId = data.versions.find((v) => v.version === version)?.keyId;
  const key = data.keys.find((k) => k.key_id === keyId);
  if (!key) throw new InputError(`${address.namespace}/${address.type} has no version ${version}.`, 404);
  return new Response(key.ascii_armor, {
    headers: {
      'content-type': 'text/plain; charset=utf-8',
      'cache-control': ctx.config.access === 'private' ? 'private, no-store' : 'public, max-age=31536000, immutable',
      ...PAGE_SECURITY_HEADERS,
    },
  });
});

function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** The version's statement reference, from its R2 record (null when it has none). */
function provenanceOf(address: ProviderAddress, version: string, record: VersionRecord | null): Html {
  return provenanceFact(record?.provenance, path('v1', 'provenance', 'providers', address.namespace, address.type, version));
}

/** A version as a page shows it: with its packages, from the page data or (older versions) from its R2 record. */
type ShownVersion = PageVersion & { platforms: PagePlatform[] };

/** The provider page of `current` (a version of this registry's provider): its R2 record read once, for its packages and its provenance. */
async function renderVersion(ctx: PageContext, address: ProviderAddress, data: ProviderPageData, current: PageVersion): Promise<RenderedPage> {
  const record = await readVersionRecord(storeFromEnv(ctx.env), address, current.version);
  return render(
    ctx,
    data,
    withPlatforms(current, record),
    false,
    await loadDownloads(ctx, providerCounterName(address)),
    provenanceOf(address, current.version, record),
  );
}

function withPlatforms(version: PageVersion, record: VersionRecord | null): ShownVersion {
  return { ...version, platforms: version.platforms ?? (record ? pagePlatforms(record) : []) };
}

function render(
  ctx: PageContext,
  data: ProviderPageData,
  current: ShownVersion,
  mirror: boolean,
  downloads: PageDownloads = null,
  provenance: Html | null = null,
): RenderedPage {
  const { hostname, namespace, type } = data.address;
  const own = hostname === ctx.config.hostname;
  const stable = newestListed(data);
  const isPre = semver.prerelease(current.version) !== null;
  const constraint = suggestedConstraint(current.version, stable);
  const address = snippetAddress(ctx.url, ctx.config.hostname);
  // Own providers install from this registry under the address rule's host; mirrored ones keep their real address.
  const source = own && !mirror ? `${address.sourceHost}/${namespace}/${type}` : `${hostname}/${namespace}/${type}`;
  const base = mirror ? path('mirror', hostname, namespace, type) : path('providers', namespace, type);
  const versionHref = (v: string) => (mirror ? `${base}?version=${encodeURIComponent(v)}` : `${base}/${encodeURIComponent(v)}`);
  const key = data.keys.find((k) => k.key_id === current.keyId);

  const snippets = useSnippets(ctx, { hostname, namespace, type, own, mirror, source, constraint, address });

  const body = html`<div class="layout">
<div>
<h1>${namespace}/${type} <span class="badge ${isPre ? 'pre' : 'accent'}">v${current.version}</span>${isPre ? html` <span class="badge pre">prerelease</span>` : ''}</h1>
${lifecycleNotes('provider', data.deprecated, current.version, current)}
<p class="lead">${data.description || (mirror ? html`Mirrored from <code>${hostname}</code>.` : html`<span class="muted">No description.</span>`)}</p>
<p class="meta">${!mirror && current.docs ? html`<a class="button" href="${base}/${encodeURIComponent(current.version)}/docs">Documentation</a>` : ''}
<span class="muted">Published <time datetime="${current.publishedAt}">${current.publishedAt.slice(0, 10)}</time> · protocol ${current.protocols.join(', ')} · ${current.platforms.length} ${current.platforms.length === 1 ? 'platform' : 'platforms'}</span></p>
<section aria-labelledby="use"><h2 id="use">${mirror ? 'Install' : 'Use'}</h2>${snippets}</section>
<section aria-labelledby="about"><h2 id="about">Version ${current.version}</h2>
${versionFacts(current, { source, key, mirror, base, downloads, provenance })}</section>
${platformsSection(current, downloads)}
</div>
${versionsAside(data, current, mirror, base, versionHref)}
</div>`;
  const crumbs: [string, string][] = mirror
    ? [
        ['Providers', '/'],
        [hostname, '/'],
      ]
    : [
        ['Providers', '/'],
        [namespace, `/?q=${encodeURIComponent(namespace)}`],
      ];
  return {
    html: layout({
      title: `${namespace}/${type} ${current.version}`,
      hostname: ctx.host,
      crumbs,
      session: sessionName(ctx),
      description: data.description || `${hostname}/${namespace}/${type} provider`,
      body,
    }),
  };
}

/** Each platform's file, size, downloads (when counted) and zh:/h1: hashes. */
function platformsSection(current: ShownVersion, downloads: PageDownloads): Html {
  return html`<section aria-labelledby="platforms"><h2 id="platforms">Platforms</h2>
<div class="scroll"><table>
<thead><tr><th scope="col">Platform</th><th scope="col">Size</th>${downloads && downloads !== 'unavailable' ? html`<th scope="col">Downloads (${downloads.days} days)</th>` : ''}<th scope="col">Hashes</th></tr></thead>
<tbody>${current.platforms.map((p) => html`<tr><td><strong>${p.os}_${p.arch}</strong><br><span class="hash">${p.filename}</span></td><td class="num">${formatSize(p.size)}</td>${downloads && downloads !== 'unavailable' ? html`<td class="num">${platformDownloads(downloads, current.version, `${p.os}_${p.arch}`)}</td>` : ''}<td class="hash"><span class="copyable">zh:${p.shasum}</span><br><span class="copyable">${p.h1}</span></td></tr>`)}</tbody>
</table></div></section>`;
}

/** The side list of versions, with the version switcher (a form that works without script). */
function versionsAside(data: ProviderPageData, current: PageVersion, mirror: boolean, base: string, versionHref: (v: string) => string): Html {
  return html`<aside class="side" aria-labelledby="versions-heading">
<h2 id="versions-heading">Versions <span class="muted">(${data.versions.length})</span></h2>
<form method="get" action="${base}" class="filter">
<label for="version" class="sr-only">Switch version</label>
<select id="version" name="version"${mirror ? '' : html` data-nav="${base}"`}>${data.versions.map((v) => html`<option value="${v.version}"${v.version === current.version ? html` selected` : ''}>${v.version}${semver.prerelease(v.version) ? ' (prerelease)' : ''}${v.withdrawn ? ' (withdrawn)' : ''}</option>`)}</select>
<button type="submit">Go</button>
</form>
<ul class="versions">${data.versions.map((v) => html`<li${v.version === current.version ? html` aria-current="page"` : ''}><a href="${versionHref(v.version)}">${v.version}</a>${semver.prerelease(v.version) ? html` <span class="badge pre">pre</span>` : ''}${lifecycleBadges(v)}<span class="muted">${v.publishedAt.slice(0, 10)}</span></li>`)}</ul>
</aside>`;
}

/** The version's facts: source address, dates, protocols, downloads, provenance, signing key, documentation. */
function versionFacts(
  current: PageVersion,
  facts: {
    source: string;
    key: ProviderPageData['keys'][number] | undefined;
    mirror: boolean;
    base: string;
    downloads: PageDownloads;
    provenance: Html | null;
  },
): Html {
  const { source, key, mirror, base, downloads, provenance } = facts;
  return html`<dl class="facts">
<dt>Source address</dt><dd><code>${source}</code></dd>
<dt>Published</dt><dd><time datetime="${current.publishedAt}">${current.publishedAt.slice(0, 10)}</time></dd>
<dt>Protocols</dt><dd>${current.protocols.join(', ')}</dd>
${downloadsFact(downloads, current.version)}
${provenance ?? ''}
<dt>Signing key</dt><dd><code class="copyable">${current.keyId}</code>${key?.fingerprint ? html`<br><span class="hash">fingerprint <span class="copyable">${key.fingerprint}</span></span>` : ''}${mirror ? '' : html`<br><a href="${base}/${encodeURIComponent(current.version)}/signing-key.asc">Armored public key</a>`}</dd>
${
  mirror
    ? ''
    : html`<dt>Documentation</dt><dd>${
        current.docs
          ? html`<a href="${base}/${encodeURIComponent(current.version)}/docs">Resources, data sources and schema</a>`
          : html`<span class="muted">Not published for this version. Add it with <code>npm run publish-provider -- … --docs spec.json</code> (a Provider Code Specification or <code>terraform providers schema -json</code> output).</span>`
      }</dd>`
}
</dl>`;
}
