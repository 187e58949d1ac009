import { pathSegment } from '../http/responses';
import { parseSourceAddress } from '../protocol/address';
import { InputError } from '../protocol/errors';
import { moduleAddress, type ModuleAddress, type ModuleVersionsBody } from '../protocol/modules-v1';
import { parseVersion } from '../protocol/version';
import { compareVersionsDescending, newestVersion } from '../protocol/version';
import { readModuleCatalog, readModuleDocs, readModuleVersions } from '../store/modules/read';
import type { ModuleCatalog, ModuleDocs, ModuleInterface } from '../store/modules/types';
import { canSee, page, type PageContext } from './context';
import { sessionName } from './home';
import { html, path, raw, type Html } from './html';
import { layout, snippet } from './layout';
import { credentialsSnippet, hostBlockSnippet, ociCredentialsSnippet, ociModuleSnippet, snippetAddress } from './snippets';
import { lifecycleBadges, lifecycleNotes } from './lifecycle';
import { downloadsFact, loadDownloads } from './downloads';
import { moduleCounterName } from '../downloads/names';
import { readModuleLifecyclePage } from '../store/lifecycle/read';
import { withdrawnVersions, type LifecycleState } from '../store/lifecycle/state';
import { provenanceFact } from './provenance';
import { readModuleRecord } from '../store/modules/record';
import { storeFromEnv } from '../store/store';

/**
 * Module pages, beside the provider pages and on the same frame (layout,
 * escaping `html` template, private-mode sessions through `page`):
 * /modules (every module the visitor may see) and
 * /modules/NS/NAME/SYSTEM[/VERSION] (the `module` block to copy, inputs,
 * outputs, required providers linked to our provider pages, submodules, the
 * README). Publisher text is escaped by `html`; the README was sanitised at
 * publish time and is the one stored value inserted as markup. A module
 * outside the session's scope is "not found", like one that does not exist.
 * KV reads on a cache miss: the catalog (index), or the version list and that
 * version's docs (module page).
 */

/** GET /modules */
export const modulesIndexPage = page(async (ctx) => {
  const { config } = ctx;
  const document = await readModuleCatalog(ctx.env.REGISTRY_KV, config.hostname, config.listTtlMs, ctx.freshness);
  const catalog: ModuleCatalog = document === null ? { modules: [] } : (JSON.parse(document.text) as ModuleCatalog);
  const visible = catalog.modules.filter((m) => canSee(ctx, config.hostname, m.namespace));
  const { sourceHost } = snippetAddress(ctx.url, config.hostname);
  const body = html`<h1>Modules</h1>
<p class="lead">Terraform and OpenTofu modules served by <strong>${ctx.host}</strong>.</p>
${
  visible.length === 0
    ? html`<div class="card empty"><p><strong>No modules yet.</strong></p><p>Publish one with <code>npm run publish-module -- ./DIR --namespace NS --name NAME --system SYSTEM --version 1.0.0</code>, or try <code>npm run demo</code>.</p></div>`
    : html`<ul class="grid">${visible.map(
        (m) => html`<li><a class="card" href="${path('modules', m.namespace, m.name, m.system)}">
<div class="name">${m.namespace}/${m.name}/${m.system}</div>
<div class="addr">${sourceHost}/${m.namespace}/${m.name}/${m.system}</div>
<span class="badge accent">v${newestVersion(m.versions) ?? ''}</span> <span class="muted">${m.versions.length} ${m.versions.length === 1 ? 'version' : 'versions'}</span>
</a></li>`,
      )}</ul>`
}`;
  return { html: layout({ title: 'Modules', hostname: ctx.host, session: sessionName(ctx), body }) };
});

/** GET /modules/:namespace/:name/:system[/:version] — the named version, else the newest stable one. */
export const modulePage = page(async (ctx, params) => {
  const { config } = ctx;
  const address = moduleAddress(
    config.hostname,
    pathSegment(params.namespace, 'namespace'),
    pathSegment(params.name, 'name'),
    pathSegment(params.system, 'system'),
  );
  const requested = params.version === undefined ? null : parseVersion(pathSegment(params.version, 'version'));
  const title = `${address.namespace}/${address.name}/${address.system}`;
  const list = canSee(ctx, address.hostname, address.namespace)
    ? await readModuleVersions(ctx.env.REGISTRY_KV, address, config.listTtlMs, ctx.freshness)
    : null;
  if (list === null) throw new InputError(`There is no module ${title} here${config.access === 'private' ? ' that your token can read' : ''}.`, 404);
  const versions = (JSON.parse(list.text) as ModuleVersionsBody).modules[0].versions.map((v) => v.version);
  // Withdrawn versions are not listed (src/store/lifecycle/) but keep their page, marked.
  const lifecycle = await readModuleLifecyclePage(ctx.env.REGISTRY_KV, address, config.listTtlMs, ctx.freshness);
  const withdrawn = lifecycle ? [...withdrawnVersions(lifecycle)] : [];
  const version = requested ?? newestVersion(versions);
  if (version === null || !(versions.includes(version) || withdrawn.includes(version)))
    throw new InputError(`Module ${title} has no version ${requested}.`, 404);
  const docsDocument = await readModuleDocs(ctx.env.REGISTRY_KV, address, version, config.listTtlMs, ctx.freshness);
  const docs = docsDocument === null ? null : (JSON.parse(docsDocument.text) as ModuleDocs);
  const where = snippetAddress(ctx.url, config.hostname);
  const downloads = await loadDownloads(ctx, moduleCounterName(address));
  const record = await readModuleRecord(storeFromEnv(ctx.env), address, version);
  const provenance = provenanceFact(record?.provenance, path('v1', 'provenance', 'modules', address.namespace, address.name, address.system, version));
  const body = html`<h1>${title} <span class="badge accent">v${version}</span></h1>
${lifecycleNotes('module', lifecycle?.deprecated, version, lifecycle?.versions[version])}
<dl class="facts">${downloads === null ? '' : downloadsFact(downloads, version)}${provenance}</dl>
${snippet('module-block', 'Use it', moduleBlock(address, where.sourceHost, version))}
${where.hostBlock ? hostBlockSnippet(where) : ''}
${snippet(
  'snippet-oci-module',
  'Or from the OCI view (OpenTofu ≥ 1.10)',
  ociModuleSnippet(where.browsedHost, address.name.replace(/[^a-z0-9_]/g, '_'), address.namespace, address.name, address.system, version) +
    (config.access === 'private' ? `\n# in the CLI configuration\n${ociCredentialsSnippet(where.browsedHost)}` : ''),
  html`An <code>oci://</code> source names one version by its tag (no constraints); the package is served as a zip.`,
)}
${
  config.access === 'private'
    ? snippet(
        'snippet-credentials',
        'Credentials (private registry)',
        credentialsSnippet([{ host: where.sourceHost }]),
        html`In the CLI configuration, with a read token for this namespace (<code>npm run token -- create --namespace ${address.namespace}</code>).`,
      )
    : ''
}
${versionsList(address, [...versions, ...withdrawn], version, lifecycle)}
${docs === null ? '' : docsHtml(ctx, docs, address, version, where.sourceHost)}`;
  return {
    html: layout({
      title: `${title} ${version}`,
      hostname: ctx.host,
      session: sessionName(ctx),
      body,
      crumbs: [
        ['Modules', '/modules'],
        [title, path('modules', address.namespace, address.name, address.system)],
      ],
    }),
  };
});

/** The `module` block to copy: source on `host` (the address rule's, see snippets.ts), `~> MAJOR.MINOR` of the version shown. */
export function moduleBlock(address: ModuleAddress, host: string, version: string, subdirectory = ''): string {
  const [major, minor] = version.split(/[.+-]/);
  return `module "${address.name.replace(/[^a-z0-9_]/g, '_')}" {
  source  = "${host}/${address.namespace}/${address.name}/${address.system}${subdirectory}"
  version = "~> ${major}.${minor}"
}`;
}

const MAX_LISTED_VERSIONS = 200;

function versionsList(address: ModuleAddress, versions: string[], current: string, lifecycle: LifecycleState | null): Html {
  const sorted = [...versions].sort(compareVersionsDescending);
  return html`<details><summary>Versions (${versions.length})</summary><ul>${sorted
    .slice(0, MAX_LISTED_VERSIONS)
    .map((v) =>
      v === current
        ? html`<li><strong>${v}</strong>${lifecycleBadges(lifecycle?.versions[v])}</li>`
        : html`<li><a href="${path('modules', address.namespace, address.name, address.system, v)}">${v}</a>${lifecycleBadges(lifecycle?.versions[v])}</li>`,
    )}</ul>
${versions.length > MAX_LISTED_VERSIONS ? html`<p class="muted">and ${versions.length - MAX_LISTED_VERSIONS} older versions</p>` : ''}</details>`;
}

function docsHtml(ctx: PageContext, docs: ModuleDocs, address: ModuleAddress, version: string, sourceHost: string): Html {
  return html`${interfaceHtml(ctx, docs, 'h2')}
${docs.submodules.map(
  (sub, i) => html`<section><h2>Submodule <code>${sub.path}</code></h2>
${snippet(`submodule-${i}`, 'Use it', moduleBlock(address, sourceHost, version, `//${sub.path}`))}
${interfaceHtml(ctx, sub, 'h3')}</section>`,
)}
${docs.readmeHtml ? html`<section class="readme"><h2>README</h2>${raw(docs.readmeHtml)}</section>` : ''}`;
}

function interfaceHtml(ctx: PageContext, m: ModuleInterface, heading: 'h2' | 'h3'): Html {
  const h = (text: string) => (heading === 'h2' ? html`<h2>${text}</h2>` : html`<h3>${text}</h3>`);
  const note = (description: string | null, sensitive: boolean) => html`${description ?? ''}${sensitive ? html` <span class="badge">sensitive</span>` : ''}`;
  return html`${h('Inputs')}
${
  m.inputs.length === 0
    ? html`<p class="muted">No inputs.</p>`
    : html`<div class="scroll"><table><thead><tr><th>name</th><th>type</th><th>default</th><th>required</th><th>description</th></tr></thead><tbody>
${m.inputs.map((i) => html`<tr><td><code>${i.name}</code></td><td>${i.type === null ? '' : html`<code>${i.type}</code>`}</td><td>${i.default === null ? '' : html`<code>${i.default}</code>`}</td><td>${i.required ? 'yes' : 'no'}</td><td>${note(i.description, i.sensitive)}</td></tr>`)}
</tbody></table></div>`
}
${h('Outputs')}
${
  m.outputs.length === 0
    ? html`<p class="muted">No outputs.</p>`
    : html`<div class="scroll"><table><thead><tr><th>name</th><th>description</th></tr></thead><tbody>
${m.outputs.map((o) => html`<tr><td><code>${o.name}</code></td><td>${note(o.description, o.sensitive)}</td></tr>`)}
</tbody></table></div>`
}
${
  m.providers.length === 0
    ? ''
    : html`${h('Required providers')}<div class="scroll"><table><thead><tr><th>name</th><th>source</th><th>version</th></tr></thead><tbody>
${m.providers.map((p) => html`<tr><td><code>${p.name}</code></td><td>${providerSource(ctx, p.source)}</td><td>${p.version === null ? '' : html`<code>${p.version}</code>`}</td></tr>`)}
</tbody></table></div>`
}
${m.requiredVersion === null ? '' : html`<p>Terraform <code>${m.requiredVersion}</code></p>`}`;
}

/** A provider source, linked to our provider page when it is one of this registry's providers. */
function providerSource(ctx: PageContext, source: string | null): Html | string {
  if (source === null) return '';
  try {
    const address = parseSourceAddress(source, 'registry.terraform.io');
    if (address.hostname === ctx.config.hostname) return html`<a href="${path('providers', address.namespace, address.type)}"><code>${source}</code></a>`;
  } catch {
    // Not a provider address we can parse: shown as written.
  }
  return html`<code>${source}</code>`;
}
