import { pathSegment } from '../http/responses';
import { providerAddress, type ProviderAddress } from '../protocol/address';
import { InputError } from '../protocol/errors';
import { parseVersion } from '../protocol/version';
import type { DocAttribute, DocBlock, DocEntity, DocSchema, ProviderDocs } from '../protocol/provider-docs-shape';
import { readDocs } from '../store/pages/read';
import { canSee, page, type PageContext } from './context';
import { exampleBlock } from './example-hcl';
import { sessionName } from './home';
import { html, path, type Html } from './html';
import { layout, snippet } from './layout';

/**
 * The docs pages of a version, generated from the schema published with it
 * (--docs): /providers/NS/TYPE/VERSION/docs (the provider's configuration
 * and an index), …/docs/resources/NAME and …/docs/data-sources/NAME (every
 * attribute and nested block with type, required/optional/computed,
 * sensitive, deprecation and description, and an example block). One KV read
 * (the version's docs) on a cache miss.
 */

interface Target {
  address: ProviderAddress;
  version: string;
  docs: ProviderDocs;
  base: string;
}

async function load(ctx: PageContext, params: Record<string, string>): Promise<Target> {
  const address = providerAddress(ctx.config.hostname, pathSegment(params.namespace, 'namespace'), pathSegment(params.type, 'type'));
  const version = parseVersion(pathSegment(params.version, 'version'));
  const docs = canSee(ctx, address.hostname, address.namespace)
    ? await readDocs(ctx.env.REGISTRY_KV, address, version, ctx.config.listTtlMs, ctx.freshness)
    : null;
  if (docs === null) {
    throw new InputError(
      `No docs for ${address.namespace}/${address.type} ${version}: the version does not exist here, or was published without docs (npm run publish-provider -- … --docs spec.json adds them).`,
      404,
    );
  }
  return { address, version, docs, base: `${path('providers', address.namespace, address.type, version)}/docs` };
}

function frame(ctx: PageContext, t: Target, title: string, current: string, main: Html) {
  const { namespace, type } = t.address;
  const list = (label: string, kind: string, entities: DocEntity[]) =>
    entities.length
      ? html`<h2>${label}</h2><ul class="toc">${entities.map((e) => {
          const href = `${t.base}/${kind}/${encodeURIComponent(e.name)}`;
          return html`<li><a href="${href}"${href === current ? html` aria-current="page"` : ''}>${e.name}</a></li>`;
        })}</ul>`
      : '';
  const body = html`<div class="layout">
<div>${main}</div>
<nav class="side card" aria-label="Resources and data sources">
<p><a href="${t.base}"${t.base === current ? html` aria-current="page"` : ''}>Provider configuration</a></p>
${list('Resources', 'resources', t.docs.resources)}
${list('Data sources', 'data-sources', t.docs.dataSources)}
</nav></div>`;
  return {
    html: layout({
      title,
      hostname: ctx.host,
      session: sessionName(ctx),
      crumbs: [
        ['Providers', '/'],
        [`${namespace}/${type}`, path('providers', namespace, type)],
        [t.version, path('providers', namespace, type, t.version)],
        ['Docs', t.base],
      ],
      body,
    }),
  };
}

/** GET /providers/:namespace/:type/:version/docs */
export const docsIndexPage = page(async (ctx, params) => {
  const t = await load(ctx, params);
  const entities = (label: string, kind: string, list: DocEntity[]) =>
    list.length
      ? html`<h2>${label}</h2><div class="scroll"><table><thead><tr><th scope="col">Name</th><th scope="col">Description</th></tr></thead><tbody>${list.map((e) => html`<tr><td><a href="${t.base}/${kind}/${encodeURIComponent(e.name)}"><code>${e.name}</code></a></td><td>${firstLine(e.schema.description)}${e.schema.deprecation ? html` <span class="badge pre">deprecated</span>` : ''}</td></tr>`)}</tbody></table></div>`
      : '';
  const main = html`<h1>${t.address.namespace}/${t.address.type} <span class="badge accent">v${t.version}</span></h1>
<p class="lead">${t.docs.providerSchema.description || 'Provider documentation generated from its schema.'}</p>
<p class="muted">${t.docs.resources.length} resources, ${t.docs.dataSources.length} data sources.</p>
<h2>Provider configuration</h2>
${snippet('example-provider', 'Example', exampleBlock('provider', t.docs.provider, t.docs.providerSchema))}
${schemaSection(t.docs.providerSchema)}
${entities('Resources', 'resources', t.docs.resources)}
${entities('Data sources', 'data-sources', t.docs.dataSources)}`;
  return frame(ctx, t, `${t.address.namespace}/${t.address.type} ${t.version} docs`, t.base, main);
});

/** GET /providers/:namespace/:type/:version/docs/resources/:name and …/data-sources/:name */
export function entityPage(kind: 'resources' | 'data-sources') {
  return page(async (ctx, params) => {
    const t = await load(ctx, params);
    const name = pathSegment(params.name, 'name');
    const entity = (kind === 'resources' ? t.docs.resources : t.docs.dataSources).find((e) => e.name === name);
    const what = kind === 'resources' ? 'resource' : 'data source';
    if (!entity) throw new InputError(`${t.address.namespace}/${t.address.type} ${t.version} has no ${what} "${name}".`, 404);
    const main = html`<h1><code>${entity.name}</code> <span class="badge">${what}</span></h1>
${entity.schema.deprecation ? html`<p class="note"><strong>Deprecated:</strong> ${entity.schema.deprecation}</p>` : ''}
${entity.schema.description ? html`<p class="lead">${entity.schema.description}</p>` : ''}
<h2>Example</h2>
${snippet('example', 'Example usage (required arguments)', exampleBlock(kind === 'resources' ? 'resource' : 'data', entity.name, entity.schema))}
${schemaSection(entity.schema)}`;
    return frame(
      ctx,
      t,
      `${entity.name} · ${t.address.namespace}/${t.address.type} ${t.version}`,
      `${t.base}/${kind}/${encodeURIComponent(entity.name)}`,
      main,
    );
  });
}

function firstLine(text: string | undefined): string {
  return (text ?? '').split('\n')[0]!.slice(0, 200);
}

function schemaSection(schema: DocSchema): Html {
  const args = schema.attributes.filter((a) => a.mode !== 'computed');
  const computed = schema.attributes.filter((a) => a.mode === 'computed');
  return html`${args.length || schema.blocks.length ? html`<h2>Arguments</h2><div class="card">${args.map(attribute)}${schema.blocks.map(block)}</div>` : ''}
${computed.length ? html`<h2>Read-only attributes</h2><div class="card">${computed.map(attribute)}</div>` : ''}
${!schema.attributes.length && !schema.blocks.length ? html`<p class="muted">No arguments.</p>` : ''}`;
}

const MODE_LABEL = { required: 'required', optional: 'optional', computed: 'computed', computed_optional: 'optional, computed' } as const;

function attribute(a: DocAttribute): Html {
  return html`<div class="attr">
<span class="attr-name">${a.name}</span> <code>${a.type}</code>
<span class="badge${a.mode === 'required' ? ' req' : ''}">${MODE_LABEL[a.mode]}</span>${a.sensitive ? html`<span class="badge">sensitive</span>` : ''}${a.deprecation ? html`<span class="badge dep">deprecated</span>` : ''}
${a.description ? html`<p>${a.description}</p>` : ''}${a.deprecation ? html`<p class="muted">${a.deprecation}</p>` : ''}
${a.nested ? html`<div class="nested">${a.nested.attributes.map(attribute)}</div>` : ''}
</div>`;
}

function block(b: DocBlock): Html {
  const count = b.minItems || b.maxItems ? ` (${b.minItems ?? 0}${b.maxItems ? `–${b.maxItems}` : '+'})` : '';
  return html`<div class="attr">
<span class="attr-name">${b.name}</span> <code>${b.nesting === 'single' || b.nesting === 'group' ? 'block' : `${b.nesting} of blocks`}${count}</code>
<span class="badge${(b.minItems ?? 0) > 0 ? ' req' : ''}">${(b.minItems ?? 0) > 0 ? 'required' : 'optional'}</span>${b.deprecation ? html`<span class="badge dep">deprecated</span>` : ''}
${b.description ? html`<p>${b.description}</p>` : ''}${b.deprecation ? html`<p class="muted">${b.deprecation}</p>` : ''}
<div class="nested">${b.attributes.map(attribute)}${b.blocks.map(block)}</div>
</div>`;
}
