// Markdown for text that comes from models, documents and search results,
// none of which is trusted. Two layers keep it inert:
//
//  1. marked renders Markdown, but raw HTML in the text (block or inline,
//     <script>, <img onerror=...>) is escaped and shown as text, links keep
//     only http(s), mailto and same-site paths, and images become links, so
//     nothing loads from elsewhere;
//  2. DOMPurify then sanitises the HTML marked produced, with a strict tag
//     and attribute list, and returns a DOM fragment (never a string to
//     assign to innerHTML).
//
// The page's Content-Security-Policy (no inline script) is a third layer.

import { Marked } from '../vendor/marked.esm.js';
import DOMPurify from '../vendor/purify.es.mjs';

const ESC = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export function escapeHTML(s) {
  return String(s).replace(/[&<>"']/g, (c) => ESC[c]);
}

// safeHref returns href when it is an absolute http(s) or mailto address or
// a path on this site, and null otherwise (javascript:, data:, file:, ...).
export function safeHref(href) {
  if (typeof href !== 'string') return null;
  const h = href.trim();
  if (/^(https?:|mailto:)/i.test(h)) return h;
  if (h.startsWith('/') && !h.startsWith('//')) return h;
  return null;
}

const md = new Marked({
  gfm: true,
  breaks: true,
  async: false,
  renderer: {
    html({ text, block }) {
      const s = escapeHTML(text);
      return block ? `<p class="raw">${s}</p>` : s;
    },
    link({ href, title, tokens }) {
      const inner = this.parser.parseInline(tokens);
      const h = safeHref(href);
      if (!h) return inner;
      const t = title ? ` title="${escapeHTML(title)}"` : '';
      return `<a href="${escapeHTML(h)}"${t}>${inner}</a>`;
    },
    image({ href, text }) {
      const h = safeHref(href);
      const label = escapeHTML(text || href || '');
      return h ? `<a href="${escapeHTML(h)}">${label}</a>` : label;
    },
  },
});

const PURIFY = {
  RETURN_DOM_FRAGMENT: true,
  ALLOWED_TAGS: ['a', 'p', 'br', 'hr', 'strong', 'b', 'em', 'i', 'del', 's', 'code', 'pre', 'blockquote',
    'ul', 'ol', 'li', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'sup', 'sub'],
  ALLOWED_ATTR: ['href', 'title', 'class', 'start', 'align'],
  ALLOW_DATA_ATTR: false,
  ALLOW_ARIA_ATTR: false,
};

// render returns the Markdown text as a sanitised DOM fragment whose links
// open in a new tab.
export function render(text) {
  const html = md.parse(String(text ?? ''));
  const frag = DOMPurify.sanitize(html, PURIFY);
  for (const a of frag.querySelectorAll('a[href]')) {
    if (!safeHref(a.getAttribute('href'))) {
      a.replaceWith(...a.childNodes);
      continue;
    }
    a.target = '_blank';
    a.rel = 'noopener noreferrer nofollow';
  }
  return frag;
}

const CITE = /\[\^?(\d{1,3})\]|【(\d{1,3})】/g;

// linkCitations replaces the citation marks [n] (also [^n] and 【n】) in the
// text of root with the element make(n) returns, for 1 <= n <= count.
// Marks inside links and code stay as they are.
export function linkCitations(root, count, make) {
  if (!count) return;
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
    acceptNode(node) {
      for (let p = node.parentNode; p && p !== root; p = p.parentNode) {
        if (p.nodeName === 'A' || p.nodeName === 'CODE' || p.nodeName === 'PRE') return NodeFilter.FILTER_REJECT;
      }
      CITE.lastIndex = 0;
      return CITE.test(node.nodeValue) ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_SKIP;
    },
  });
  const nodes = [];
  while (walker.nextNode()) nodes.push(walker.currentNode);
  for (const node of nodes) {
    const s = node.nodeValue;
    const out = [];
    let last = 0;
    CITE.lastIndex = 0;
    for (let m; (m = CITE.exec(s));) {
      const n = Number(m[1] || m[2]);
      if (n < 1 || n > count) continue;
      if (m.index > last) out.push(document.createTextNode(s.slice(last, m.index)));
      out.push(make(n));
      last = m.index + m[0].length;
    }
    if (!out.length) continue;
    if (last < s.length) out.push(document.createTextNode(s.slice(last)));
    node.replaceWith(...out);
  }
}
