import { readCatalog, type CatalogEntry } from '../store/pages/read';
import { canSee, page, type PageContext } from './context';
import { html, path } from './html';
import { layout } from './layout';
import { snippetAddress } from './snippets';

/**
 * GET / — the providers of this registry, then mirrored upstream providers
 * by hostname: name, latest version, description. `?q=` filters on the
 * server (a GET form, so it works without JavaScript); the script filters
 * as you type. One KV read (the catalogue) on a cache miss.
 */
export const homePage = page(async (ctx) => {
  const q = (ctx.url.searchParams.get('q') ?? '').trim().toLowerCase().slice(0, 100);
  const catalog = await readCatalog(ctx.env.REGISTRY_KV, ctx.config.listTtlMs, ctx.freshness);
  const visible = catalog.providers.filter((p) => canSee(ctx, p.hostname, p.namespace));
  const matching = visible.filter((p) => q === '' || searchText(p).includes(q));
  const own = ctx.config.hostname;
  const ours = matching.filter((p) => p.hostname === own);
  const upstream = matching.filter((p) => p.hostname !== own);
  const empty =
    visible.length === 0
      ? catalog.providers.length > 0
        ? html`<div class="card empty"><p><strong>Your token can read none of the providers here.</strong></p><p>Its scopes: <code>${ctx.session?.record.scopes.join(', ') ?? ''}</code>. Ask for a token with the namespaces you need.</p></div>`
        : html`<div class="card empty"><p><strong>No providers yet.</strong></p><p>Publish one with <code>npm run publish-provider -- ./dist --namespace NAME</code>, or try <code>npm run demo</code>.</p></div>`
      : matching.length === 0
        ? html`<p class="card empty">No provider matches “${q}”. <a href="/">Show all</a></p>`
        : '';
  const body = html`<h1>Providers</h1>
<p class="lead">Terraform and OpenTofu providers served by <strong>${ctx.host}</strong>: find one, pick a version, copy the configuration.</p>
<form class="filter" method="get" action="/" role="search">
<label for="filter" class="sr-only">Filter providers</label>
<input id="filter" type="search" name="q" value="${q}" placeholder="Filter by name or description" data-filter autocomplete="off">
<button type="submit">Filter</button>
</form>
<p class="muted" data-count aria-live="polite">${matching.length} ${matching.length === 1 ? 'provider' : 'providers'}</p>
${empty}
${ours.length ? html`<section aria-labelledby="own"><h2 id="own">This registry</h2>${grid(ours, snippetAddress(ctx.url, own).sourceHost)}</section>` : ''}
${upstream.length ? html`<section aria-labelledby="mirrored"><h2 id="mirrored">Mirrored providers</h2><p class="muted">Upstream providers this network mirror holds, under their own hostnames.</p>${grid(upstream, null)}</section>` : ''}`;
  return {
    html: layout({ title: 'Providers', hostname: ctx.host, session: sessionName(ctx), body, description: `Terraform and OpenTofu providers at ${ctx.host}` }),
  };
});

function searchText(p: CatalogEntry): string {
  return `${p.hostname}/${p.namespace}/${p.type} ${p.description}`.toLowerCase();
}

/** Provider cards; `sourceHost` (the address rule's host) for our own providers, null for mirrored ones (their real hostname). */
function grid(entries: CatalogEntry[], sourceHost: string | null) {
  const mirrored = sourceHost === null;
  return html`<ul class="grid">${entries.map(
    (
      p,
    ) => html`<li data-name="${searchText(p)}"><a class="card" href="${mirrored ? path('mirror', p.hostname, p.namespace, p.type) : path('providers', p.namespace, p.type)}">
<div class="name">${p.namespace}/${p.type}</div>
<div class="addr">${sourceHost ?? p.hostname}/${p.namespace}/${p.type}</div>
<p class="desc">${p.description || html`<span class="muted">No description</span>`}</p>
<span class="badge accent">v${p.latest}</span> <span class="muted">${p.versionCount} ${p.versionCount === 1 ? 'version' : 'versions'} · ${p.publishedAt.slice(0, 10)}</span>
</a></li>`,
  )}</ul>`;
}

/** The header's "signed in as" for layout(): null in public mode. */
export function sessionName(ctx: PageContext): { name: string } | null {
  return ctx.session ? { name: ctx.session.record.name || ctx.session.record.id } : null;
}
