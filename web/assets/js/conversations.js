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
