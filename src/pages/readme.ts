import { Marked, type Tokens } from 'marked';
import { escapeHtml } from '../../pages/html';

/**
 * A proxied module's README.md as HTML for its page, rendered in the Worker
 * with `marked` (GitHub-flavoured Markdown, as publish-module renders it) but
 * with no way to carry markup of the README's own. Its raw HTML is reduced to
 * what a reader needs (publish-module's sanitize-html keeps an allow-list,
 * too large for a Worker bundle): comments and the content of script, style
 * and similar elements are dropped, `<img>` with an http(s) src becomes our
 * own `<img src alt>`, `<br>` stays, every other tag is dropped and the text
 * between tags is escaped. Link targets other than http(s), mailto and
 * relative ones are dropped (the link text stays), and images load only from
 * http(s). Everything else is marked's own output, which escapes text, code
 * and attributes. Nothing of the README's own markup reaches the page: every
 * tag in the output is one this file writes, with escaped values.
 */


/** `href` if it is http(s), mailto or relative (not protocol-relative); null otherwise. */
function safeHref(href: string): string | null {
  const value = href.trim();
  if (/^[a-z][a-z0-9+.-]*:/i.test(value)) return /^(https?|mailto):/i.test(value) ? value : null;
  if (value.startsWith('//') || value.startsWith('\\')) return null;
  return value;
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", '#39': "'" };
const decodeEntities = (text: string) => text.replace(/&(amp|lt|gt|quot|apos|#39);/g, (_, name: string) => ENTITIES[name]!);

/** One attribute's value from a raw start tag (quoted or not, entities decoded), or null. */
function attribute(tag: string, name: string): string | null {
  const match = new RegExp(`\\s${name}\\s*=\\s*(?:"([^"]*)"|'([^']*)'|([^\\s"'>]+))`, 'i').exec(tag);
  return match ? decodeEntities(match[1] ?? match[2] ?? match[3] ?? '') : null;
}

/** Raw HTML from the README as the file comment says: only our own img and br tags, everything else text. */
function reduceHtml(raw: string): string {
  const withoutHidden = raw
    .replace(/<!--[\s\S]*?(-->|$)/g, '')
    .replace(/<(script|style|iframe|object|embed|noscript|template|textarea|title|svg|math)\b[\s\S]*?(<\/\1\s*>|$)/gi, '');
  let out = '';
  let last = 0;
  for (const match of withoutHidden.matchAll(/<\/?([a-zA-Z][a-zA-Z0-9-]*)\b[^>]*>?/g)) {
    out += escapeHtml(withoutHidden.slice(last, match.index));
    last = match.index + match[0].length;
    const name = match[1]!.toLowerCase();
    if (name === 'br') out += '<br>';
    if (name === 'img' && !match[0].startsWith('</')) {
      const src = attribute(match[0], 'src')?.trim();
      if (src && /^https?:\/\//i.test(src)) out += `<img src="${escapeHtml(src)}" alt="${escapeHtml(attribute(match[0], 'alt') ?? '')}">`;
    }
  }
  return out + escapeHtml(withoutHidden.slice(last));
}

const markdown = new Marked({
  gfm: true,
  async: false,
  renderer: {
    html({ text }: Tokens.HTML | Tokens.Tag) {
      return reduceHtml(text);
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
