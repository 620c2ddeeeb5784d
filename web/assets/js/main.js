// mixchat's web app: start-up (what the server offers), settings, routing
// (#/ new chat, #/c/<id> a conversation, #/kb[/<name>] knowledge bases),
// the language switch, the phone-sized sidebar and the status banners.

import * as settings from './settings.js';
import * as api from './api.js';
import { h, $, $$ } from './dom.js';
import { t, translate, getLang, setLang } from './i18n.js';
import * as chat from './chat.js';
import * as convs from './conversations.js';
import * as kb from './kb.js';

const SETTINGS_KEY = 'mixchat.settings';

const app = {
  features: { mix: false, kb: false, kbManage: false, search: false },
  models: [],
  kbs: [],
  engines: [], // [{name, available, reason}]
  defaultEngine: '',
  settings: { mode: '', model: '', kbs: [], kbsChosen: false, engine: '' },
  defaultKBs: [], // the server's default knowledge bases
  conversation: null,
};

function loadSettings() {
  try { Object.assign(app.settings, JSON.parse(localStorage.getItem(SETTINGS_KEY) || '{}')); } catch { /* ignore */ }
  if (!Array.isArray(app.settings.kbs)) app.settings.kbs = [];
}

function saveSettings() {
  try { localStorage.setItem(SETTINGS_KEY, JSON.stringify(app.settings)); } catch { /* ignore */ }
}

app.modeAvailable = (mode) => (mode === 'llm' ? true : !!app.features[mode]);

app.setMode = (mode) => {
  if (!app.modeAvailable(mode)) mode = app.features.mix ? 'mix' : 'llm';
  app.settings.mode = mode;
  $('#opt-mode').value = mode;
  $('#opt-kb-wrap').hidden = !(mode === 'kb' || (mode === 'mix' && app.features.kb));
  $('#opt-engine-wrap').hidden = !(mode === 'search' || (mode === 'mix' && app.features.search));
  saveSettings();
};

// ---------------------------------------------------------------- options

function paintModes() {
  for (const opt of $$('#opt-mode option')) {
    const ok = app.modeAvailable(opt.value);
    opt.disabled = !ok;
    const key = { mix: 'modeMix', llm: 'modeLLM', kb: 'modeKB', search: 'modeSearch' }[opt.value];
    opt.textContent = ok ? t(key) : `${t(key)} — ${t('unavailable')}`;
  }
}

function paintModels() {
  const sel = $('#opt-model');
  const def = app.models.find((m) => m.default) || app.models[0];
  if (!app.models.some((m) => m.name === app.settings.model)) app.settings.model = def ? def.name : '';
  sel.replaceChildren(...app.models.map((m) => h('option', { value: m.name }, m.extractive ? `${m.name} (${t('extractiveBadge')})` : m.name)));
  sel.value = app.settings.model;
  paintExtractive();
}

function paintExtractive() {
  const m = app.models.find((x) => x.name === app.settings.model);
  let dismissed = false;
  try { dismissed = sessionStorage.getItem('mixchat.extractiveDismissed') === '1'; } catch { /* ignore */ }
  $('#banner-extractive').hidden = !(m && m.extractive) || dismissed;
}

// engineName names an engine for the menu: the offline engine over a
// folder says it searches local files, not the web.
function engineName(e) {
  return e.provider === 'local' ? `${e.name} (${t('localFiles')})` : e.name;
}

function paintEngines() {
  const sel = $('#opt-engine');
  const usable = app.engines.filter((e) => e.available);
  if (!usable.some((e) => e.name === app.settings.engine)) {
    app.settings.engine = (usable.find((e) => e.name === app.defaultEngine) || usable[0] || {}).name || '';
  }
  sel.replaceChildren(...app.engines.map((e) => h('option', { value: e.name, disabled: !e.available, title: e.reason || null },
    e.available ? engineName(e) : `${engineName(e)} — ${e.reason || t('unavailable')}`)));
  sel.value = app.settings.engine;
}

function paintKBPicker() {
  app.settings.kbs = app.settings.kbs.filter((k) => app.kbs.includes(k));
  const box = $('#opt-kb-list');
  const items = app.kbs.map((name) => {
    const id = `kbopt-${name.replace(/[^\w-]/g, '_')}`;
    const cb = h('input', { type: 'checkbox', id, value: name, checked: app.settings.kbs.includes(name) });
    cb.addEventListener('change', () => {
      app.settings.kbs = [...box.querySelectorAll('input:checked')].map((x) => x.value);
      app.settings.kbsChosen = true;
      saveSettings();
      paintKBSummary();
    });
    return h('div.check', cb, h('label', { htmlFor: id }, name));
  });
  if (!app.kbs.length) items.push(h('p.muted', t('noKB')));
  items.push(h('a.manage', { href: '#/kb' }, t('manageKB')));
  box.replaceChildren(h('legend.visually-hidden', t('knowledgeBase')), ...items);
  paintKBSummary();
}

function paintKBSummary() {
  const n = app.settings.kbs.length;
  $('#opt-kb-summary').textContent = n === 0 ? t('noKBSelected') : n === 1 ? app.settings.kbs[0] : t('kbCount', { n });
}

app.flashOptions = (msg) => {
  const opts = $('#options');
  opts.classList.remove('flash');
  void opts.offsetWidth;
  opts.classList.add('flash');
  app.toast(msg);
  $('#opt-kb').open = true;
};

// ---------------------------------------------------------------- toast

let toastTimer = 0;
app.toast = (msg) => {
  let el = $('#toast');
  if (!el) {
    el = h('div.toast', { id: 'toast', role: 'status' });
    document.body.append(el);
  }
  el.textContent = msg;
  el.classList.add('show');
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => el.classList.remove('show'), 3500);
};

// ---------------------------------------------------------------- reachability

let polling = 0;
function setReachable(ok) {
  const banner = $('#banner-offline');
  if (ok) {
    if (!banner.hidden) {
      banner.hidden = true;
      clearInterval(polling);
      polling = 0;
      if (!app.started) start();
    }
    return;
  }
  $('#banner-offline-text').textContent = t('unreachable');
  banner.hidden = false;
  if (!polling) {
    polling = setInterval(async () => {
      try {
        const r = await fetch('/healthz', { cache: 'no-store' });
        if (r.ok) setReachable(true);
      } catch { /* still down */ }
    }, 3000);
  }
}

// ---------------------------------------------------------------- API key

// authState is what the server said about the key: null while nothing was
// refused, else {refused: whether a key was sent, msg}.
let authState = null;
let keyAsked = false; // the dialog opened by itself once since the last key given

function paintAuth() {
  $('#key-button').hidden = !api.getKey();
  const banner = $('#banner-auth');
  banner.hidden = !authState;
  if (authState) $('#banner-auth-text').textContent = authState.refused ? t('keyRefused', { msg: authState.msg }) : t('keyNeeded');
}

function authRequired(msg) {
  authState = { refused: !!api.getKey(), msg: msg || '' };
  paintAuth();
  if (!keyAsked) {
    keyAsked = true;
    openKeyDialog();
  }
}

function openKeyDialog() {
  const dlg = $('#key-dialog');
  if (dlg.open) return;
  const err = $('#key-error');
  err.hidden = !(authState && authState.refused);
  if (authState && authState.refused) err.textContent = t('keyRefused', { msg: authState.msg });
  $('#key-input').value = '';
  $('#key-forget').hidden = !api.getKey();
  dlg.showModal();
  $('#key-input').focus();
}

function saveKey(e) {
  e.preventDefault();
  const key = $('#key-input').value.trim();
  if (!key) return;
  api.setKey(key, $('#key-remember').checked);
  $('#key-dialog').close('ok');
  keyAsked = false;
  if (app.started) {
    location.reload(); // everything shown so far was loaded without the key
    return;
  }
  authState = null;
  paintAuth();
  start();
}

// ---------------------------------------------------------------- sidebar (phones)

app.closeSidebar = () => {
  document.body.classList.remove('sidebar-open');
  $('#menu-toggle').setAttribute('aria-expanded', 'false');
  $('#scrim').hidden = true;
};

function toggleSidebar() {
  const open = !document.body.classList.contains('sidebar-open');
  document.body.classList.toggle('sidebar-open', open);
  $('#menu-toggle').setAttribute('aria-expanded', String(open));
  $('#scrim').hidden = !open;
  if (open) $('#new-chat').focus();
}

// ---------------------------------------------------------------- routing

let shownConv = null;

app.conversationCreated = (conv) => {
  shownConv = conv.id;
  history.replaceState(null, '', `#/c/${encodeURIComponent(conv.id)}`);
  convs.refresh();
};
app.conversationsChanged = () => convs.refresh();
app.newChat = () => { shownConv = null; settings.reset(); chat.newConversation(); convs.highlight(); };
app.kbsChanged = async () => {
  try { await kb.loadKBs(); } catch { /* shown where it matters */ }
  paintKBPicker();
};

function route() {
  app.closeSidebar();
  const hash = decodeURIComponent(location.hash.replace(/^#/, '')) || '/';
  const parts = hash.split('/').filter(Boolean);
  const onKB = parts[0] === 'kb';
  $('#view-chat').hidden = onKB;
  $('#view-kb').hidden = !onKB;
  $('#kb-link').setAttribute('aria-current', onKB ? 'page' : 'false');
  if (onKB) {
    kb.showKB(parts.slice(1).join('/'));
    return;
  }
  if (parts[0] === 'c' && parts[1]) {
    const id = parts.slice(1).join('/');
    if (id !== shownConv) {
      shownConv = id;
      chat.loadConversation(id).then(() => convs.highlight());
    }
    return;
  }
  if (shownConv !== null || !app.routed) app.newChat();
  app.routed = true;
}

// ---------------------------------------------------------------- start

function relabel() {
  translate();
  paintModes();
  paintModels();
  paintEngines();
  paintKBPicker();
  chat.relabel();
  convs.highlight();
  if (!$('#banner-offline').hidden) $('#banner-offline-text').textContent = t('unreachable');
  paintAuth();
}

// discover learns what the server offers from its listings, without
// sending any request it would refuse: the knowledge-base chat is there
// when the knowledge bases can be listed, the search chat when the search
// engines can, and the mix on every mixchat server (the one serving this
// page).
async function discover() {
  const [models, kbs, engines] = await Promise.allSettled([
    api.get('/server/list_models'),
    api.get('/knowledge_base/list_knowledge_bases'),
    api.get('/server/list_search_engines'),
  ]);
  if (models.status === 'rejected') throw models.reason;
  app.models = (models.value && models.value.data) || [];
  app.features.kbManage = kbs.status === 'fulfilled';
  app.kbs = app.features.kbManage ? (Array.isArray(kbs.value) ? kbs.value : kbs.value.data || []).map((x) => (typeof x === 'string' ? x : x.kb_name || x.name)).filter(Boolean) : [];
  // The knowledge bases the server searches when a request names none
  // (mixchat's "default" field; Chatchat lists names only).
  app.defaultKBs = app.features.kbManage && Array.isArray(kbs.value && kbs.value.default) ? kbs.value.default : [];
  // The questions suggested for the default knowledge bases (their
  // profile); none without one.
  app.questions = app.features.kbManage && Array.isArray(kbs.value && kbs.value.questions) ? kbs.value.questions.filter((q) => typeof q === 'string' && q) : [];
  app.features.kb = app.features.kbManage;
  if (engines.status === 'fulfilled') {
    // mixchat lists engines with their availability; Chatchat only names them.
    const v = engines.value || {};
    const list = Array.isArray(v.engines) ? v.engines : (Array.isArray(v) ? v : v.data || []);
    app.engines = list.map((x) => (typeof x === 'string' ? { name: x, available: true, provider: '' } : { name: x.name, available: x.available !== false, reason: x.reason || '', provider: x.provider || '' }))
      .filter((x) => x.name);
    app.defaultEngine = v.default || '';
  }
  app.features.search = engines.status === 'fulfilled' && app.engines.some((e) => e.available);
  app.features.mix = true;
}

async function start() {
  try {
    await discover();
  } catch (err) {
    if (err.kind === 'network') { setReachable(false); return; }
    if (err.kind === 'auth') return; // the key dialog is open; saving a key starts again
    app.toast(err.message);
  }
  app.started = true;
  authState = null;
  paintAuth();
  if (!app.settings.mode || !app.modeAvailable(app.settings.mode)) app.settings.mode = app.features.mix ? 'mix' : 'llm';
  // Until the user picks knowledge bases, the server's defaults are selected.
  if (!app.settings.kbsChosen && !app.settings.kbs.length) app.settings.kbs = app.defaultKBs.filter((k) => app.kbs.includes(k));
  relabel();
  app.setMode(app.settings.mode);
  $('#options').hidden = false; // hidden until it is known what the server offers
  convs.refresh();
  route();
}

function wire() {
  $('#lang-select').value = getLang();
  $('#lang-select').addEventListener('change', (e) => { setLang(e.target.value); relabel(); });
  $('#opt-mode').addEventListener('change', (e) => app.setMode(e.target.value));
  $('#opt-model').addEventListener('change', (e) => { app.settings.model = e.target.value; saveSettings(); paintExtractive(); });
  $('#opt-engine').addEventListener('change', (e) => { app.settings.engine = e.target.value; saveSettings(); });
  $('#menu-toggle').addEventListener('click', toggleSidebar);
  // On a phone the notice shows two lines; a tap shows the rest.
  $('#banner-extractive p').addEventListener('click', () => {
    const b = $('#banner-extractive');
    b.classList.toggle('expanded');
    b.querySelector('p').setAttribute('aria-expanded', String(b.classList.contains('expanded')));
  });
  $('#banner-extractive-close').addEventListener('click', () => {
    try { sessionStorage.setItem('mixchat.extractiveDismissed', '1'); } catch { /* ignore */ }
    $('#banner-extractive').hidden = true;
    $('#composer-input').focus();
  });
  $('#scrim').addEventListener('click', app.closeSidebar);
  $('#banner-retry').addEventListener('click', async () => {
    try {
      const r = await fetch('/healthz', { cache: 'no-store' });
      if (r.ok) setReachable(true);
    } catch { /* still down */ }
  });
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && document.body.classList.contains('sidebar-open')) app.closeSidebar();
  });
  document.addEventListener('click', (e) => {
    const menu = $('#opt-kb');
    if (menu.open && !menu.contains(e.target)) menu.open = false;
  });
  window.addEventListener('hashchange', route);
  api.onReachability(setReachable);
  api.onAuthRequired(authRequired);
  $('#key-form').addEventListener('submit', saveKey);
  $('#key-cancel').addEventListener('click', () => $('#key-dialog').close('cancel'));
  $('#key-forget').addEventListener('click', () => { api.setKey(''); location.reload(); });
  $('#key-button').addEventListener('click', openKeyDialog);
  $('#banner-auth-btn').addEventListener('click', openKeyDialog);
}

loadSettings();
translate();
chat.initChat(app);
convs.initConversations(app);
kb.initKB(app);
settings.initSettings(app);
wire();
start();
