/**
 * Minimal HTML building for the module pages: every text from a publisher
 * goes through escapeHtml; only the README, already sanitised at publish
 * time, is inserted as HTML.
 */

/** Escapes text for HTML element content and double-quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A whole page: title (escaped) and a body of already-built HTML. */
export function pageHtml(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>
body{font:16px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1a1a1a;background:#fff}
@media (prefers-color-scheme:dark){body{color:#e8e8e8;background:#161616}a{color:#8ab4f8}}
table{border-collapse:collapse;width:100%;margin:1rem 0}th,td{border:1px solid #8884;padding:.3rem .5rem;text-align:left;vertical-align:top}
pre{background:#8882;padding:.75rem;overflow:auto}code{font-family:ui-monospace,monospace}
.readme{border-top:1px solid #8884;margin-top:2rem}
</style></head>
<body><nav><a href="/modules">Modules</a></nav>
<main>
${body}
</main></body></html>
`;
}

/** A text/html response (never cached by shared caches in private mode: see the route). */
export function htmlResponse(html: string, cacheControl: string, status = 200): Response {
  return new Response(html, { status, headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': cacheControl } });
}
