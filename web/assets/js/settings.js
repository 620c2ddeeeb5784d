// Per-conversation settings: a system prompt, the temperature, top_k and
// the score threshold. They are kept in this browser, one set per
// conversation, and sent with every question of the conversation; the
// system prompt is stored on the server (PUT /conversations/ID/system),
// where the conversation's memory opens the model's prompt with it.

import * as api from './api.js';
import { $ } from './dom.js';
import { t } from './i18n.js';

const KEY = 'mixchat.conversationSettings.';

let app;
let pending = {}; // the settings of a new chat, until its conversation exists

function load(id) {
  try { return JSON.parse(localStorage.getItem(KEY + id) || '{}') || {}; } catch { return {}; }
}

function store(id, v) {
  try {
    if (Object.keys(v).length) localStorage.setItem(KEY + id, JSON.stringify(v));
    else localStorage.removeItem(KEY + id);
  } catch { /* private mode: kept for this page only */ }
}

// current returns the settings of the conversation shown (or of the new
// chat).
export function current() {
  const id = app.conversation && app.conversation.id;
  return id ? load(id) : pending;
}

// tuning returns the request fields the settings set for mode: the
// temperature everywhere, top_k and score_threshold where a knowledge base
// is searched.
export function tuning(mode) {
  const s = current();
  const out = {};
  if (typeof s.temperature === 'number') out.temperature = s.temperature;
  if (mode === 'kb' || mode === 'mix') {
    if (typeof s.topK === 'number') out.top_k = s.topK;
    if (typeof s.threshold === 'number') out.score_threshold = s.threshold;
  }
  return out;
}

async function putSystem(id, text) {
  await api.request('PUT', `/conversations/${encodeURIComponent(id)}/system`, { messages: text ? [text] : [] });
}

// created moves a new chat's settings to its conversation, storing the
// system prompt on the server before the first question.
export async function created(id) {
  const s = pending;
  pending = {};
  if (!Object.keys(s).length) return;
  store(id, s);
  if (s.system) {
    try { await putSystem(id, s.system); } catch (err) { app.toast(err.message); }
  }
}

// reset starts a new chat with no settings.
export function reset() { pending = {}; }

function num(input, min, max) {
  const v = input.value.trim();
  if (v === '') return undefined;
  const n = Number(v);
  return Number.isFinite(n) && n >= min && n <= max ? n : NaN;
}

function open() {
  const s = current();
  $('#set-system').value = s.system || '';
  $('#set-temperature').value = s.temperature ?? '';
  $('#set-topk').value = s.topK ?? '';
  $('#set-threshold').value = s.threshold ?? '';
  $('#settings-error').hidden = true;
  $('#settings-dialog').showModal();
}

async function save(e) {
  e.preventDefault();
  const next = {};
  const system = $('#set-system').value.trim();
  if (system) next.system = system;
  const fields = [['temperature', '#set-temperature', 0, 2], ['topK', '#set-topk', 1, 100], ['threshold', '#set-threshold', 0, 2]];
  for (const [k, sel, min, max] of fields) {
    const v = num($(sel), min, max);
    if (Number.isNaN(v)) {
      $('#settings-error').textContent = t('settingsRange', { min, max });
      $('#settings-error').hidden = false;
      $(sel).focus();
      return;
    }
    if (v !== undefined) next[k] = k === 'topK' ? Math.round(v) : v;
  }
  const id = app.conversation && app.conversation.id;
  const before = current();
  if (id) {
    store(id, next);
    if ((before.system || '') !== (next.system || '')) {
      try { await putSystem(id, next.system || ''); } catch (err) { app.toast(err.message); }
    }
  } else {
    pending = next;
  }
  $('#settings-dialog').close();
}

export function initSettings(a) {
  app = a;
  $('#settings-button').addEventListener('click', open);
  $('#settings-form').addEventListener('submit', save);
  $('#settings-cancel').addEventListener('click', () => $('#settings-dialog').close());
}
