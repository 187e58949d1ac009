import type { IRequest } from 'itty-router';
import type { Env } from '../env';
import { settings } from '../config';
import { pathSegment } from '../http';
import { scopeAllows } from '../auth/tokens';
import { parseSourceAddress } from '../protocol/address';
import { formatModuleAddress, moduleAddress, type ModuleAddress, type ModuleVersionsBody } from '../protocol/modules-v1';
import { parseVersion } from '../protocol/version';
import { compareVersionsDescending, newestVersion } from '../store/modules-order';
import { readModuleCatalog, readModuleDocs, readModuleVersions } from '../store/modules-read';
import type { ModuleCatalog, ModuleDocs, ModuleInterface } from '../store/modules-types';
import { escapeHtml, htmlResponse, pageHtml } from './modules-html';

/**
 * Module pages for people: /modules (every module of this registry) and
 * /modules/NS/NAME/SYSTEM[/VERSION] (the `module` block to copy, inputs,
 * outputs, required providers, submodules, README). Server-rendered, every
 * publisher-supplied text escaped; the README was sanitised at publish.
 * In private mode the routes are behind the read-token guard (src/index.ts).
 */

/** GET /modules — the catalog, one row per module with its newest version. */
export async function modulesIndexPage(request: IRequest, env: Env): Promise<Response> {
  const config = settings(env);
  const document = await readModuleCatalog(env.REGISTRY_KV, config.hostname, config.listTtlMs);
  const catalog: ModuleCatalog = document === null ? { modules: [] } : (JSON.parse(document.text) as ModuleCatalog);
  // Private mode: only the namespaces the token's scopes cover (set by requireAnyReadToken).
  const scopes = request.tokenScopes as string[] | undefined;
  const { hostname } = config;
  const visible = scopes === undefined ? catalog.modules : catalog.modules.filter((m) => scopeAllows(scopes, hostname, m.namespace, hostname));
  const rows = visible.map((m) => {
    const href = `/modules/${m.namespace}/${m.name}/${m.system}`;
    return `<tr><td><a href="${escapeHtml(href)}">${escapeHtml(`${m.namespace}/${m.name}/${m.system}`)}</a></td><td>${escapeHtml(newestVersion(m.versions) ?? '')}</td><td>${m.versions.length}</td></tr>`;
  });
  const body = `<h1>Modules</h1>
${rows.length === 0
    ? '<p>No module is published yet. Publish one with <code>npm run publish-module -- ./DIR --namespace NS --name NAME --system SYSTEM --version 1.0.0</code>.</p>'
    : `<table><thead><tr><th>module</th><th>newest</th><th>versions</th></tr></thead><tbody>${rows.join('')}</tbody></table>`}`;
  return htmlResponse(pageHtml('Modules', body), pageCacheControl(env));
}

/**
 * GET /modules/:namespace/:name/:system[/:version] — one module version's
 * page (the newest stable version when none is named). 404 page for an
 * unknown module or version; 400 (JSON, as every malformed path) for
 * malformed parts.
 */
export async function modulePage(request: IRequest, env: Env): Promise<Response> {
  const config = settings(env);
  const address = moduleAddress(
    config.hostname,
    pathSegment(request.params.namespace, 'namespace'),
    pathSegment(request.params.name, 'name'),
    pathSegment(request.params.system, 'system'),
  );
  const requested = request.params.version === undefined ? null : parseVersion(pathSegment(request.params.version, 'version'));
  const ttl = config.listTtlMs;
  const list = await readModuleVersions(env.REGISTRY_KV, address, ttl);
  const versions = list === null ? [] : (JSON.parse(list.text) as ModuleVersionsBody).modules[0].versions.map((v) => v.version);
  const version = requested ?? newestVersion(versions);
  const title = `${address.namespace}/${address.name}/${address.system}`;
  if (version === null || !versions.includes(version)) {
    const what = version === null ? `Module ${title} is not published here.` : `Module ${title} has no version ${version}.`;
    return htmlResponse(pageHtml('Not found', `<h1>Not found</h1><p>${escapeHtml(what)}</p>`), 'no-store', 404);
  }
  const docsDocument = await readModuleDocs(env.REGISTRY_KV, address, version, ttl);
  const docs = docsDocument === null ? null : (JSON.parse(docsDocument.text) as ModuleDocs);
  const host = new URL(request.url).host;
  const body = `<h1>${escapeHtml(title)} <small>${escapeHtml(version)}</small></h1>
<h2>Use it</h2>
<pre><code>${escapeHtml(moduleBlock(address, host, version))}</code></pre>
${versionsList(address, versions, version)}
${docs === null ? '' : docsHtml(docs, env, host, address, version)}`;
  return htmlResponse(pageHtml(`${title} ${version}`, body), pageCacheControl(env));
}

/** Pages list mutable things: reused like version lists in public mode; never stored in private mode. */
function pageCacheControl(env: Env): string {
  const config = settings(env);
  return config.access === 'private' ? 'private, no-store' : config.listCacheControl;
}

/** The `module` block to copy: source on the host the page was served from, `~> MAJOR.MINOR` of that version. */
export function moduleBlock(address: ModuleAddress, host: string, version: string, subdirectory = ''): string {
  const [major, minor] = version.split(/[.+-]/);
  return `module "${address.name.replace(/[^a-z0-9_]/g, '_')}" {
  source  = "${host}/${address.namespace}/${address.name}/${address.system}${subdirectory}"
  version = "~> ${major}.${minor}"
}`;
}

function versionsList(address: ModuleAddress, versions: string[], current: string): string {
  const items = [...versions].sort(compareVersionsDescending).slice(0, 200).map((v) => v === current
    ? `<li><strong>${escapeHtml(v)}</strong></li>`
    : `<li><a href="${escapeHtml(`/modules/${address.namespace}/${address.name}/${address.system}/${v}`)}">${escapeHtml(v)}</a></li>`);
  const more = versions.length > 200 ? `<p>and ${versions.length - 200} older versions</p>` : '';
  return `<details><summary>Versions (${versions.length})</summary><ul>${items.join('')}</ul>${more}</details>`;
}

function docsHtml(docs: ModuleDocs, env: Env, host: string, address: ModuleAddress, version: string): string {
  const sections = [interfaceHtml(docs, env, 2)];
  for (const sub of docs.submodules) {
    sections.push(`<h2>Submodule <code>${escapeHtml(sub.path)}</code></h2>
<pre><code>${escapeHtml(moduleBlock(address, host, version, `//${sub.path}`))}</code></pre>
${interfaceHtml(sub, env, 3)}`);
  }
  if (docs.readmeHtml) sections.push(`<section class="readme"><h2>README</h2>${docs.readmeHtml}</section>`);
  return sections.join('\n');
}

function interfaceHtml(m: ModuleInterface, env: Env, level: number): string {
  const h = `h${level}`;
  const cell = (text: string | null) => `<td>${text === null ? '' : escapeHtml(text)}</td>`;
  const code = (text: string | null) => `<td>${text === null ? '' : `<code>${escapeHtml(text)}</code>`}</td>`;
  const inputs = m.inputs.length === 0 ? '<p>No inputs.</p>' : `<table><thead><tr><th>name</th><th>type</th><th>default</th><th>required</th><th>description</th></tr></thead><tbody>${
    m.inputs.map((i) => `<tr>${code(i.name)}${code(i.type)}${code(i.default)}${cell(i.required ? 'yes' : 'no')}${cell(`${i.description ?? ''}${i.sensitive ? ' (sensitive)' : ''}`)}</tr>`).join('')
  }</tbody></table>`;
  const outputs = m.outputs.length === 0 ? '<p>No outputs.</p>' : `<table><thead><tr><th>name</th><th>description</th></tr></thead><tbody>${
    m.outputs.map((o) => `<tr>${code(o.name)}${cell(`${o.description ?? ''}${o.sensitive ? ' (sensitive)' : ''}`)}</tr>`).join('')
  }</tbody></table>`;
  const providers = m.providers.length === 0 ? '' : `<${h}>Required providers</${h}><table><thead><tr><th>name</th><th>source</th><th>version</th></tr></thead><tbody>${
    m.providers.map((p) => `<tr>${code(p.name)}<td>${providerSourceHtml(p.source, env)}</td>${code(p.version)}</tr>`).join('')
  }</tbody></table>`;
  const terraform = m.requiredVersion === null ? '' : `<p>Terraform <code>${escapeHtml(m.requiredVersion)}</code></p>`;
  return `<${h}>Inputs</${h}>${inputs}<${h}>Outputs</${h}>${outputs}${providers}${terraform}`;
}

/** A provider source, linked to our provider page when it is one of this registry's providers. */
function providerSourceHtml(source: string | null, env: Env): string {
  if (source === null) return '';
  try {
    const address = parseSourceAddress(source, 'registry.terraform.io');
    if (address.hostname === settings(env).hostname) {
      return `<a href="${escapeHtml(`/providers/${address.namespace}/${address.type}`)}"><code>${escapeHtml(source)}</code></a>`;
    }
  } catch {
    // Not a valid provider address: shown as written.
  }
  return `<code>${escapeHtml(source)}</code>`;
}
