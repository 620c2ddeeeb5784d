// A tiny element builder. Text always goes in as text nodes, never as HTML.

// h creates an element: h('button.btn.small', {type: 'button', onclick}, 'text', child...).
// Attributes starting with "on" become event listeners; aria-*/data-*/role
// and anything else not a property become attributes; null and false skip.
export function h(spec, attrs, ...children) {
  const [tag, ...classes] = spec.split('.');
  const el = document.createElement(tag || 'div');
  if (classes.length) el.className = classes.join(' ');
  if (attrs && (typeof attrs !== 'object' || attrs instanceof Node || Array.isArray(attrs))) {
    children.unshift(attrs);
    attrs = null;
  }
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = [el.className, v].filter(Boolean).join(' ');
    else if (k === 'text') el.textContent = v;
    else if (k in el && !k.includes('-') && k !== 'list' && k !== 'form') el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c == null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export const $ = (sel, root = document) => root.querySelector(sel);
export const $$ = (sel, root = document) => [...root.querySelectorAll(sel)];

// icon returns an inline SVG icon from a path list (no innerHTML).
const ICONS = {
  copy: ['M8 8h11v11H8z', 'M5 16V5h11'],
  check: ['M5 12l5 5 9-10'],
  redo: ['M20 11a8 8 0 1 0-2.3 5.7', 'M20 4v7h-7'],
  up: ['M7 11v9H4v-9z', 'M7 11l4-8c1.5 0 2.5 1 2.5 2.5V9H19a2 2 0 0 1 2 2.3l-1.3 7A2 2 0 0 1 17.7 20H7'],
  down: ['M7 13V4H4v9z', 'M7 13l4 8c1.5 0 2.5-1 2.5-2.5V15H19a2 2 0 0 0 2-2.3l-1.3-7A2 2 0 0 0 17.7 4H7'],
  edit: ['M4 20h4L19 9l-4-4L4 16z'],
  trash: ['M4 7h16', 'M9 7V4h6v3', 'M6 7l1 13h10l1-13'],
  left: ['M15 5l-7 7 7 7'],
  right: ['M9 5l7 7-7 7'],
  file: ['M6 3h8l4 4v14H6z', 'M14 3v4h4'],
  download: ['M12 4v11', 'M7 10l5 5 5-5', 'M5 20h14'],
  braces: ['M9 4c-2 0-3 1-3 3v3l-2 2 2 2v3c0 2 1 3 3 3', 'M15 4c2 0 3 1 3 3v3l2 2-2 2v3c0 2-1 3-3 3'],
};
export function icon(name) {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('class', 'icon');
  for (const d of ICONS[name] || []) {
    const p = document.createElementNS(ns, 'path');
    p.setAttribute('d', d);
    svg.append(p);
  }
  return svg;
}

// announce reads msg to screen-reader users through the page's live region.
export function announce(msg) {
  const el = document.getElementById('announcer');
  if (!el) return;
  el.textContent = '';
  setTimeout(() => { el.textContent = msg; }, 30);
}

// confirmDialog asks a yes/no question in the page's <dialog>.
export function confirmDialog(text, okLabel) {
  const dlg = document.getElementById('confirm-dialog');
  document.getElementById('confirm-text').textContent = text;
  if (okLabel) document.getElementById('confirm-ok').textContent = okLabel;
  return new Promise((resolve) => {
    dlg.addEventListener('close', () => resolve(dlg.returnValue === 'ok'), { once: true });
    dlg.returnValue = '';
    dlg.showModal();
  });
}

// copyText puts text on the clipboard, with a fallback for pages that are
// not a secure context.
export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const ta = h('textarea', { value: text, readOnly: true, class: 'visually-hidden' });
    document.body.append(ta);
    ta.select();
    let ok = false;
    try { ok = document.execCommand('copy'); } catch { ok = false; }
    ta.remove();
    return ok;
  }
}
