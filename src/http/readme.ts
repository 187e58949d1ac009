import { Marked, type Tokens } from 'marked';
import { escapeHtml } from './escape-html';

/**
 * The one README renderer: a module's README.md as HTML for its page, for
 * every way a module comes in — publish-module (local, --remote and through
 * the publish API, which renders the README text the client sends) and the
 * module proxy. It runs at publish time (the result is stored in the module's
 * docs, ModuleDocs.readmeHtml), in the Worker and in Node alike.
 *
 * `marked` renders GitHub-flavoured Markdown, with no way to carry markup of
 * the README's own: its raw HTML is reduced to what a reader needs (comments
 * and the content of script, style and similar elements are dropped, `<img>`
 * with a safe src becomes our own `<img src alt>`, `<br>` stays, every other
 * tag is dropped and the text between tags is escaped). Every link and image
 * target goes through safeUrl: entities decoded, then the WHATWG URL parser
 * decides the scheme — http, https and mailto for links, http and https for
 * images; relative links stay (they resolve on our own pages), relative and
 * protocol-relative images and protocol-relative links do not. A refused
 * link keeps its text. Everything else is marked's own output, which escapes
 * text, code and attributes: every tag in the output is one this file
 * writes, with escaped values.
 */

const LINK_SCHEMES = new Set(['http:', 'https:', 'mailto:']);
const IMAGE_SCHEMES = new Set(['http:', 'https:']);
/** Stands for the page a relative link resolves on; never written out. */
const BASE = new URL('https://readme.invalid/');

/**
 * `target` (a link's href or an image's src, as written) as it may go into an
 * attribute, or null to drop it. Entities are decoded first, then the WHATWG
 * URL parser reads it as a browser would (it drops tabs, newlines and leading
 * control characters, and reads "\\" as "/", so "java\tscript:" is
 * javascript:): its scheme must be on the allow-list. A relative target is
 * kept only for a link and only when it stays on the page's own origin (not
 * "//host" or "\\host"); images load only from absolute http(s) URLs.
 */
export function safeUrl(target: string, kind: 'link' | 'image'): string | null {
  const value = decodeEntities(target).trim();
  let url: URL;
  try {
    url = new URL(value, BASE);
  } catch {
    return null;
  }
  if (!(kind === 'link' ? LINK_SCHEMES : IMAGE_SCHEMES).has(url.protocol)) return null;
  const absolute = /^[a-z][a-z0-9+.-]*:/i.test(value);
  if (url.origin === BASE.origin) return kind === 'link' && !absolute ? value : null;
  return absolute ? value : null;
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", colon: ':', tab: '\t', newline: '\n', nbsp: '\u00a0' };

/** Numeric character references and the few named ones a URL needs; an unknown name stays as written (then escaped). */
function decodeEntities(text: string): string {
  return text.replace(/&(?:#(\d{1,7})|#x([0-9a-f]{1,6})|([a-z]+));?/gi, (whole, dec: string | undefined, hex: string | undefined, name: string | undefined) => {
    if (name !== undefined) return ENTITIES[name.toLowerCase()] ?? whole;
    const code = dec !== undefined ? Number(dec) : parseInt(hex!, 16);
    return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : '\ufffd';
  });
}

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
      const src = safeUrl(attribute(match[0], 'src') ?? '', 'image');
      if (src) out += `<img src="${escapeHtml(src)}" alt="${escapeHtml(attribute(match[0], 'alt') ?? '')}">`;
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
      const href = safeUrl(token.href, 'link');
      if (href === null) return inner;
      return `<a href="${escapeHtml(href)}"${token.title ? ` title="${escapeHtml(token.title)}"` : ''}>${inner}</a>`;
    },
    image(token: Tokens.Image) {
      const src = safeUrl(token.href, 'image');
      if (src === null) return escapeHtml(token.text);
      return `<img src="${escapeHtml(src)}" alt="${escapeHtml(token.text)}"${token.title ? ` title="${escapeHtml(token.title)}"` : ''}>`;
    },
  },
});

/**
 * The largest README rendered (UTF-8 bytes): a module page needs no more, and
 * rendering costs CPU in proportion (the module proxy reads packages of up
 * to 32 MB). One cap for every way a module comes in (docs/module-proxy.md).
 */
export const MAX_README_BYTES = 1024 * 1024;

/**
 * README.md → HTML safe to put in a page (see the file comment). A README
 * over MAX_README_BYTES is not rendered: the result is one paragraph saying
 * so (the cap, and that the package holds it). Never throws.
 */
export function renderReadme(text: string): string {
  // UTF-8 takes at least one byte per UTF-16 unit and at most three: count the bytes only when it can matter.
  const bytes = text.length > MAX_README_BYTES ? text.length : text.length * 3 > MAX_README_BYTES ? new TextEncoder().encode(text).length : 0;
  if (bytes > MAX_README_BYTES) {
    return `<p>README.md is larger than the ${MAX_README_BYTES / 1048576} MiB this registry renders on its pages; read it in the module package.</p>`;
  }
  return markdown.parse(text) as string;
}
