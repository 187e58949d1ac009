import { html, raw, type Html, type Interpolation } from './html';

/**
 * The frame every page shares (modules pages reuse it): landmarks, a skip
 * link, the site header with the signed-in user in private mode, and the
 * footer. Returns the whole document as a string.
 */

export interface PageFrame {
  /** Document title (the site name is appended). */
  title: string;
  /** Shown in the header next to the site name. */
  hostname: string;
  /** Breadcrumbs before the page's h1: [label, href] pairs. */
  crumbs?: [string, string][];
  /** In private mode: who is signed in (shows the sign-out button), or null on the login page. */
  session?: { name: string } | null;
  /** One line of meta description. */
  description?: string;
  body: Interpolation;
}

const LOGO = raw(
  '<svg viewBox="0 0 24 24" aria-hidden="true" focusable="false"><rect x="2" y="2" width="20" height="20" rx="5" fill="currentColor" opacity=".14"/><path d="M7 7.5l4.5 2.6v5.2L7 12.7zM12.5 10.1L17 7.5v5.2l-4.5 2.6zM12 4.8l4.5 2.6L12 10 7.5 7.4z" fill="currentColor"/></svg>',
);

export function layout(frame: PageFrame): string {
  const crumbs = frame.crumbs?.length
    ? html`<nav class="crumbs" aria-label="Breadcrumb">${frame.crumbs.map(([label, href], i) => html`${i > 0 ? ' / ' : ''}<a href="${href}">${label}</a>`)}</nav>`
    : '';
  const who = frame.session
    ? html`<span class="who muted">Signed in as ${frame.session.name || 'token'}</span>
      <form class="inline" method="post" action="/logout"><button class="quiet" type="submit">Sign out</button></form>`
    : '';
  return `<!doctype html>${html`<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${frame.title} · ${frame.hostname}</title>
${frame.description ? html`<meta name="description" content="${frame.description}">` : ''}
<meta name="color-scheme" content="light dark">
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/assets/app.css">
<script src="/assets/app.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="site"><div class="wrap">
<a class="brand" href="/">${LOGO}<span>${frame.hostname}</span> <small>registry</small></a>
<nav aria-label="Site"><a href="/">Providers</a> <a href="/modules">Modules</a>${who}</nav>
</div></header>
<main id="main"><div class="wrap">
${crumbs}
${frame.body}
</div></main>
<footer><div class="wrap">Terraform and OpenTofu registry (providers and modules) and provider network mirror · API: <a href="/.well-known/terraform.json">/.well-known/terraform.json</a></div></footer>
</body>
</html>
`}`;
}

/** A titled, copyable code snippet; the Copy button appears only with JavaScript. */
export function snippet(id: string, title: string, code: string, note?: Interpolation): Html {
  return html`<div class="snippet">
<div class="snippet-head"><span id="${id}-label">${title}</span><button type="button" class="quiet" data-copy="${id}" hidden>Copy</button></div>
<pre id="${id}" aria-labelledby="${id}-label" tabindex="0">${code}</pre>
${note ? html`<p class="muted">${note}</p>` : ''}
</div>`;
}
