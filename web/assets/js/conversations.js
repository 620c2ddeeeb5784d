// The conversations sidebar: newest first, search by title, rename in
// place, delete with confirmation.

import * as api from './api.js';
import { h, $, icon, confirmDialog, announce } from './dom.js';
import { t, when } from './i18n.js';

let app;
let items = [];
let query = '';
let seq = 0;

export async function refresh() {
  const my = ++seq;
  let data;
  try {
    data = await api.get(`/conversations${query ? `?q=${encodeURIComponent(query)}` : ''}`);
  } catch {
    return; // the reachability banner says why
  }
  if (my !== seq) return;
  items = (data && data.conversations) || [];
  items.sort((a, b) => (b.updated_at || b.created_at || 0) - (a.updated_at || a.created_at || 0));
  paint();
}

let deferred = false;

function paint() {
  // Never redraw under a rename in progress; its end redraws.
  if (document.activeElement && document.activeElement.classList.contains('conv-rename')) {
    deferred = true;
    return;
  }
  deferred = false;
  const ul = $('#conv-list');
  const current = app.conversation && app.conversation.id;
  ul.replaceChildren(...items.map((c) => {
    const name = c.name || t('untitled');
    const link = h('a.conv-link', { href: `#/c/${encodeURIComponent(c.id)}`, 'aria-current': c.id === current ? 'page' : null, title: name },
      h('span.conv-name', name), h('span.conv-time', when(c.updated_at || c.created_at)));
    link.addEventListener('click', () => app.closeSidebar());
    const li = h('li.conv', { 'data-id': c.id, class: c.id === current ? 'current' : null },
      link,
      h('span.conv-actions',
        h('button.btn.icon.small', { type: 'button', 'aria-label': `${t('rename')}: ${name}`, title: t('rename'), onclick: () => rename(li, c) }, icon('edit')),
        h('button.btn.icon.small', { type: 'button', 'aria-label': `${t('exportMarkdown')}: ${name}`, title: t('exportMarkdown'), 'data-export': 'md', onclick: () => exportConversation(c, 'md') }, icon('download')),
        h('button.btn.icon.small', { type: 'button', 'aria-label': `${t('exportJSON')}: ${name}`, title: t('exportJSON'), 'data-export': 'json', onclick: () => exportConversation(c, 'json') }, icon('braces')),
        h('button.btn.icon.small', { type: 'button', 'aria-label': `${t('delete')}: ${name}`, title: t('delete'), onclick: () => remove(c) }, icon('trash'))));
    return li;
  }));
  const empty = $('#conv-empty');
  empty.hidden = items.length > 0;
  empty.textContent = query ? t('noMatches') : t('noConversations');
}

function rename(li, c) {
  const input = h('input.conv-rename', { value: c.name || '', 'aria-label': t('rename'), maxLength: 200 });
  let done = false;
  const finish = async (save) => {
    if (done) return;
    done = true;
    const name = input.value.trim();
    if (save && name && name !== c.name) {
      try {
        await api.request('PATCH', `/conversations/${encodeURIComponent(c.id)}`, { name });
        c.name = name;
        if (app.conversation && app.conversation.id === c.id) {
          app.conversation.name = name;
          $('#chat-title').textContent = name;
        }
      } catch (err) {
        app.toast(err.message);
      }
    }
    input.blur();
    paint();
  };
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') { e.preventDefault(); finish(true); }
    if (e.key === 'Escape') { e.preventDefault(); finish(false); }
  });
  input.addEventListener('blur', () => finish(true));
  li.replaceChildren(input);
  input.focus();
  input.select();
}

async function remove(c) {
  if (!(await confirmDialog(t('confirmDeleteConv', { name: c.name || t('untitled') }), t('delete')))) return;
  try {
    await api.request('DELETE', `/conversations/${encodeURIComponent(c.id)}`);
  } catch (err) {
    app.toast(err.message);
    return;
  }
  announce(t('deleted'));
  if (app.conversation && app.conversation.id === c.id) location.hash = '#/';
  refresh();
}

export function initConversations(a) {
  app = a;
  let timer = 0;
  $('#conv-search').addEventListener('input', (e) => {
    clearTimeout(timer);
    timer = setTimeout(() => { query = e.target.value.trim(); refresh(); }, 200);
  });
  $('#new-chat').addEventListener('click', () => {
    app.closeSidebar();
    if (location.hash === '#/' || location.hash === '') app.newChat();
    else location.hash = '#/';
  });
}

export function highlight() { paint(); }

// exportConversation saves conversation c with its messages as a file:
// Markdown to read (each question and answer, with the sources an answer
// cites) or JSON to process (the conversation and its stored messages as
// the API returns them).
async function exportConversation(c, format) {
  let messages;
  try {
    const data = await api.get(`/conversations/${encodeURIComponent(c.id)}/messages`);
    messages = (data && data.messages) || [];
  } catch (err) {
    app.toast(err.message);
    return;
  }
  const name = c.name || t('untitled');
  const base = (name.replace(/[\\/:*?"<>|\s]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 60) || 'conversation');
  let text;
  let type;
  if (format === 'json') {
    text = JSON.stringify({ conversation: { id: c.id, name: c.name || '', created_at: c.created_at, updated_at: c.updated_at }, messages }, null, 2);
    type = 'application/json';
  } else {
    const parts = [`# ${name}`, ''];
    for (const m of messages) {
      parts.push(`## ${m.role === 'user' ? t('you') : t('assistant')}`, '', String(m.content || '').trim(), '');
      const srcs = (m.metadata && Array.isArray(m.metadata.sources)) ? m.metadata.sources : [];
      if (m.role !== 'user' && srcs.length) {
        parts.push(`### ${t('sources')}`, '');
        srcs.forEach((s, i) => {
          const title = s.title || s.file || s.url || `#${i + 1}`;
          parts.push(`${i + 1}. ${s.url && /^https?:/.test(s.url) ? `[${title}](${s.url})` : title}`);
        });
        parts.push('');
      }
    }
    text = parts.join('\n');
    type = 'text/markdown';
  }
  const url = URL.createObjectURL(new Blob([text], { type: `${type};charset=utf-8` }));
  const a = h('a', { href: url, download: `${base}.${format}` });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}
