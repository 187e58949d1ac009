import { Marked, type Tokens } from 'marked';

/**
 * A proxied module's README.md as HTML for its page, rendered in the Worker
 * with `marked` (GitHub-flavoured Markdown, as publish-module renders it) but
 * with no way to carry markup of the README's own: raw HTML is escaped
 * (shown as text, where publish-module's sanitize-html keeps an allow-list —
 * too large for a Worker bundle), link targets other than http(s), mailto
 * and relative ones are dropped (the link text stays), and images load only
 * from http(s). Everything else is marked's own output, which escapes text,
 * code and attributes.
 */

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** `href` if it is http(s), mailto or relative (not protocol-relative); null otherwise. */
function safeHref(href: string): string | null {
  const value = href.trim();
  if (/^[a-z][a-z0-9+.-]*:/i.test(value)) return /^(https?|mailto):/i.test(value) ? value : null;
  if (value.startsWith('//') || value.startsWith('\\')) return null;
  return value;
}

const markdown = new Marked({
  gfm: true,
  async: false,
  renderer: {
    html({ text }: Tokens.HTML | Tokens.Tag) {
      return escapeHtml(text);
    },
    link(token: Tokens.Link) {
      const inner = this.parser.parseInline(token.tokens);
      const href = safeHref(token.href);
      if (href === null) return inner;
      return `<a href="${escapeHtml(href)}"${token.title ? ` title="${escapeHtml(token.title)}"` : ''}>${inner}</a>`;
    },
    image(token: Tokens.Image) {
      if (!/^https?:\/\//i.test(token.href.trim())) return escapeHtml(token.text);
      return `<img src="${escapeHtml(token.href.trim())}" alt="${escapeHtml(token.text)}"${token.title ? ` title="${escapeHtml(token.title)}"` : ''}>`;
    },
  },
});

/** README.md → HTML safe to put in a page (see the file comment). */
export function renderProxiedReadme(text: string): string {
  return markdown.parse(text) as string;
}
