// The chat view: the message list, the composer, streaming the four modes
// (mix, LLM only, knowledge base, search), the "how this answer was made"
// panels, citations, stop, regenerate, copy and feedback, and reloading a
// conversation's history from the server.

import * as api from './api.js';
import { h, $, icon, announce, copyText } from './dom.js';
import { t, duration, getLang } from './i18n.js';
import { render, linkCitations, safeHref } from './markdown.js';
import * as settings from './settings.js';

const ANSWERERS = ['llm', 'kb', 'search'];
const ANSWERER_LABEL = { llm: 'answererLLM', kb: 'answererKB', search: 'answererSearch' };

// answererLabel names an answerer for its panel: the search answerer by
// what the engine in use searches, the web or the local folder of the
// offline engine.
function answererLabel(name) {
  if (name === 'search' && app) {
    const engine = app.settings.engine || app.defaultEngine;
    const e = app.engines.find((x) => x.name === engine);
    if (e && e.provider === 'local') return t('answererLocalSearch');
  }
  return t(ANSWERER_LABEL[name] || name) || name;
}
const CHAT_TYPE = { mix: 'mix_chat', llm: 'llm_chat', kb: 'kb_chat', search: 'search_chat' };
const MODE_OF_TYPE = { mix_chat: 'mix', llm_chat: 'llm', kb_chat: 'kb', search_chat: 'search' };

let app;
let list; // #messages
let turns = []; // Turn objects of the conversation shown
let active = null; // { controller, reply } while a reply streams
let loadSeq = 0;

// ---------------------------------------------------------------- sources

// normSource turns one source as the API sends it into {title, url,
// snippet, score, kb}: mixchat's objects, Chatchat's document strings
// ("出处 [1] [name](url)\n\ncontent") and search_docs' {page_content,
// metadata, score} alike.
export function normSource(d) {
  if (d == null) return { title: '', url: '', snippet: '' };
  if (typeof d === 'string') {
    const m = d.match(/\[([^\]\n]+)\]\(([^)\s]+)\)/);
    const snippet = d.replace(/^\s*(出处|Source)?\s*\[\d+\]\s*(\[[^\]\n]*\]\([^)\s]*\))?\s*/i, '').trim();
    return { title: m ? m[1] : '', url: m ? m[2] : '', snippet };
  }
  const md = d.metadata || {};
  const num = (x) => (typeof x === 'number' && !Number.isNaN(x) ? x : undefined);
  // relevance is mixchat's normalised score in [0,1], higher is better;
  // Chatchat-compatible replies put a distance (smaller is closer) in score
  // next to it. mix_chat's documents carry the relevance in score.
  let relevance = num(d.relevance);
  let distance;
  let score;
  if (relevance !== undefined) distance = num(d.score);
  else if (d.from) relevance = num(d.score);
  else if (d.n !== undefined) score = num(d.score); // search_engine_chat's sources: the engine's own score
  else distance = num(d.score);
  return {
    title: d.title || d.file || d.file_name || md.title || md.source || d.url || '',
    url: d.url || d.file_url || d.link || md.url || '',
    snippet: d.snippet || d.page_content || d.content || d.text || '',
    relevance,
    distance,
    score,
    kb: d.knowledge_base || d.kb || md.knowledge_base || '',
  };
}

function errorText(ev) {
  if (!ev) return '';
  if (typeof ev === 'string') return ev;
  if (typeof ev.error === 'string') return ev.error;
  if (ev.error && typeof ev.error.message === 'string') return ev.error.message;
  return ev.msg || ev.message || '';
}

// errorBlock renders a failure: what failed, and the cause as the server
// or the upstream model gave it.
function errorBlock(err) {
  let head = t('errorTitle');
  let cause = '';
  if (err instanceof api.APIError) {
    cause = err.message;
    if (err.kind === 'network') head = t('networkError');
    else if (err.kind === 'upstream') head = `${t('errorTitle')}: ${t('upstreamError', { status: err.upstreamStatus || err.status })}`;
    else head = `${t('errorTitle')}: ${t('serverError', { status: err.status })}`;
  } else {
    cause = typeof err === 'string' ? err : errorText(err) || String(err);
  }
  return h('div.notice.error', { role: 'alert' }, h('strong', head), cause ? h('p.cause', cause) : null);
}

// scoreLabel shows how well a source matched: the relevance when known,
// else Chatchat's distance.
export function scoreLabel(src) {
  if (src.relevance !== undefined) return h('span.score', { title: t('relevanceHelp') }, `${t('relevance')} ${src.relevance.toFixed(3)}`);
  if (src.distance !== undefined) return h('span.score', { title: t('distanceHelp') }, `${t('distance')} ${src.distance.toFixed(3)}`);
  if (src.score) return h('span.score', `${t('score')} ${src.score.toFixed(3)}`);
  return null;
}

// kbFilePath is the same-origin path of a knowledge-base file's download
// link, or '' when url is not one.
function kbFilePath(url) {
  try {
    const u = new URL(url, location.href);
    if (u.origin === location.origin && u.pathname.endsWith('/knowledge_base/download_doc')) return u.pathname + u.search;
  } catch { /* not a URL */ }
  return '';
}

// highlighted renders text with the passage marked, from its first line
// to its last as they stand in text (chunking may have changed the
// spacing between them), or null when text does not hold it.
function highlighted(text, passage) {
  const lines = passage.split('\n').map((l) => l.trim()).filter((l) => l.length > 0);
  if (!lines.length) return null;
  const at = text.indexOf(lines[0].slice(0, 80));
  if (at < 0) return null;
  let end = at + Math.min(lines[0].length, 80);
  const last = lines[lines.length - 1].replace(/…$/, '');
  const j = lines.length > 1 ? text.indexOf(last, end) : -1;
  if (j >= 0 && j - at < passage.length * 2 + 200) end = j + last.length;
  return [text.slice(0, at), h('mark', text.slice(at, end)), text.slice(end)];
}

// openPassage shows the passage a source cites: highlighted in its file
// when the file is a knowledge base's text the server can send, else the
// passage alone. A web page opens in a new tab instead (sourceItem).
async function openPassage(src) {
  const dlg = $('#passage-dialog');
  const path = kbFilePath(src.url);
  $('#passage-title').textContent = src.title || '';
  const box = $('#passage-text');
  box.replaceChildren(h('mark', src.snippet || ''));
  $('#passage-where').textContent = t('passageOnly');
  const dl = $('#passage-download');
  dl.hidden = !path;
  dl.onclick = () => api.download(path, src.title || 'document').catch((err) => app.toast(err.message));
  if (!dlg.open) dlg.showModal();
  if (!path || !src.snippet) return;
  try {
    const res = await fetch(path, { headers: api.authHeaders() });
    const type = res.headers.get('Content-Type') || '';
    if (!res.ok || !/^(text\/|application\/json)/.test(type) || Number(res.headers.get('Content-Length') || 0) > 4 << 20) return;
    const parts = highlighted(await res.text(), src.snippet);
    if (!parts || !dlg.open) return;
    box.replaceChildren(...parts);
    $('#passage-where').textContent = t('passageOf', { file: src.title || '' });
    box.querySelector('mark').scrollIntoView({ block: 'center' });
  } catch { /* the passage alone stays */ }
}

function sourceItem(src, n, idPrefix) {
  const href = safeHref(src.url);
  const title = src.title || src.url || `#${n}`;
  // A web page opens in a new tab; a knowledge-base file or a local
  // search result opens the passage cited.
  const web = href && !kbFilePath(src.url) && /^https?:/i.test(href);
  const opener = web
    ? h('a', { href, target: '_blank', rel: 'noopener noreferrer nofollow' }, title)
    : (src.snippet ? h('button.source-open', { type: 'button', onclick: () => openPassage(src) }, title) : h('span.source-title', title));
  return h('li.source', { id: `${idPrefix}-${n}`, tabindex: '-1', value: n },
    h('div.source-head',
      opener,
      src.kb ? h('span.tag', src.kb) : null,
      scoreLabel(src)),
    src.snippet ? h('p.snippet', src.snippet) : null);
}

function sourceList(sources, idPrefix) {
  return h('ol.sources-list', sources.map((s, i) => sourceItem(s, i + 1, idPrefix)));
}

// citeLink is the link a citation mark [n] becomes: it brings source n of
// the list whose items have ids prefix-n into view and highlights it.
function citeLink(prefix, n, src) {
  return h('a.cite', {
    href: `#${prefix}-${n}`,
    title: src ? src.title || src.snippet.slice(0, 80) : '',
    'aria-label': `${t('sources')} ${n}`,
    onclick: (e) => {
      e.preventDefault();
      const li = document.getElementById(`${prefix}-${n}`);
      if (!li) return;
      const panel = li.closest('details');
      if (panel) panel.open = true;
      li.scrollIntoView({ block: 'nearest', behavior: 'smooth' });
      li.focus({ preventScroll: true });
      li.classList.remove('flash');
      void li.offsetWidth;
      li.classList.add('flash');
    },
  }, `[${n}]`);
}

let replySeq = 0;

// ---------------------------------------------------------------- Reply

// Reply is one assistant answer with everything shown around it.
class Reply {
  constructor(turn) {
    this.turn = turn;
    this.uid = `r${++replySeq}`;
    this.text = '';
    this.sources = [];
    this.messageId = '';
    this.answerers = {};
    this.feedback = null;
    this.done = false;
    this.frame = 0;

    this.body = h('div.md.answer', { 'aria-busy': 'true' });
    this.pending = h('div.pending', h('span.dots', { 'aria-hidden': 'true' }, h('i'), h('i'), h('i')), h('span', t('thinking')));
    this.meta = h('span.meta');
    this.notes = h('div.notes');
    this.traceStatus = h('span.trace-status');
    this.standalone = h('p.standalone', { hidden: true });
    this.answererBox = h('div.answerers');
    this.trace = h('details.trace', { hidden: true },
      h('summary', h('span.trace-title', t('howMade')), this.traceStatus),
      this.standalone, this.answererBox);
    this.sourcesBox = h('section.sources', { hidden: true, 'aria-label': t('sources') });
    this.actions = h('div.actions', { hidden: true });
    this.el = h('article.msg.assistant', { 'aria-label': t('assistant') },
      h('header.msg-head', h('span.who', t('assistant')), this.meta),
      this.trace, this.pending, this.body, this.notes, this.sourcesBox, this.actions);
  }

  // ---- streaming input

  append(delta) {
    if (!delta) return;
    this.text += delta;
    this.pending.hidden = true;
    this.schedule();
  }

  setText(text) {
    this.text = text || '';
    this.pending.hidden = true;
    this.schedule();
  }

  schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => { this.frame = 0; this.paint(); });
  }

  paint() {
    const stick = nearBottom();
    const frag = render(this.text);
    linkCitations(frag, this.sources.length, (n) => this.citeLink(n));
    this.body.replaceChildren(frag);
    if (stick) scrollToBottom();
  }

  citeLink(n) {
    return citeLink(`${this.uid}-src`, n, this.sources[n - 1]);
  }

  setSources(docs) {
    docs = docs || [];
    // mix_chat labels each document with the answerer that used it.
    const byFrom = {};
    for (const d of docs) if (d && typeof d === 'object' && d.from) (byFrom[d.from] ||= []).push(normSource(d));
    for (const [name, list] of Object.entries(byFrom)) {
      if (this.answerers[name] && !this.answerers[name].sources.length) this.updateAnswerer(name, { sources: list });
    }
    this.sources = docs.map(normSource);
    if (!this.sources.length) { this.sourcesBox.hidden = true; return; }
    this.sourcesBox.replaceChildren(h('h3', t('sources')), sourceList(this.sources, `${this.uid}-src`));
    this.sourcesBox.hidden = false;
    this.schedule();
  }

  setMessageId(id) { if (id) this.messageId = id; }

  setMeta({ model, extractive, usage, ms } = {}) {
    const parts = [];
    if (model) parts.push(h('span.model', model));
    if (extractive) parts.push(h('span.tag.warn', { title: t('extractiveBody') }, t('extractiveBadge')));
    if (usage && (usage.prompt_tokens || usage.completion_tokens)) parts.push(h('span', t('usage', { p: usage.prompt_tokens || 0, c: usage.completion_tokens || 0 })));
    if (ms) parts.push(h('span', duration(ms)));
    this.meta.replaceChildren(...parts);
  }

  // ---- how the answer was made (mix mode)

  useAnswerers(names) {
    this.trace.hidden = false;
    for (const n of names) this.answerer(n);
  }

  answerer(name) {
    let a = this.answerers[name];
    if (a) return a;
    const state = h('span.state');
    const ms = h('span.ms');
    const body = h('div.answerer-body');
    const el = h('details.answerer', { 'data-answerer': name },
      h('summary', h('span.answerer-name', answererLabel(name)), state, ms), body);
    a = { name, el, state, ms, body, status: 'waiting', text: '', sources: [], error: '', empty: false, ms_: null };
    this.answerers[name] = a;
    this.answererBox.append(el);
    this.trace.hidden = false;
    this.paintAnswerer(a);
    return a;
  }

  updateAnswerer(name, patch) {
    const a = this.answerer(name);
    Object.assign(a, patch);
    if (a.frame) { cancelAnimationFrame(a.frame); a.frame = 0; }
    this.paintAnswerer(a);
  }

  // growAnswerer adds a piece of an answerer's answer as it streams: the
  // answers are shown open, side by side, while they are written.
  growAnswerer(name, delta) {
    if (!delta) return;
    const a = this.answerer(name);
    if (!this.answererBox.classList.contains('live')) {
      this.answererBox.classList.add('live');
      this.trace.open = true;
    }
    a.el.open = true;
    a.text += delta;
    if (a.status === 'waiting') a.status = 'started';
    if (a.frame) return;
    a.frame = requestAnimationFrame(() => { a.frame = 0; this.paintAnswerer(a); });
  }

  paintAnswerer(a) {
    let st = a.status;
    if (st === 'done' && a.empty) st = 'empty';
    const key = { waiting: 'stateWaiting', started: 'stateStarted', done: 'stateDone', failed: 'stateFailed', empty: 'stateEmpty', skipped: 'stateSkipped' }[st] || 'stateWaiting';
    a.state.textContent = t(key);
    a.state.className = `state ${st}`;
    a.ms.textContent = a.ms_ != null ? duration(a.ms_) : '';
    const parts = [];
    if (a.status === 'failed') parts.push(h('p.note.bad', t('noteFailed', { msg: a.error || '?' })));
    else if (a.empty) parts.push(h('p.note', t('noteEmpty')));
    if (a.text) {
      const frag = render(a.text);
      linkCitations(frag, a.sources.length, (n) => citeLink(`${this.uid}-${a.name}-src`, n, a.sources[n - 1]));
      parts.push(h('div.md', frag));
    }
    if (a.sources.length) parts.push(sourceList(a.sources, `${this.uid}-${a.name}-src`));
    a.body.replaceChildren(...parts);
    // The compact status line, readable without opening the panel.
    this.traceStatus.replaceChildren(...Object.values(this.answerers).map((x) => {
      let s = x.status;
      if (s === 'done' && x.empty) s = 'empty';
      return h(`span.pill.${s}`, `${answererLabel(x.name)} · ${t({ waiting: 'stateWaiting', started: 'stateStarted', done: 'stateDone', failed: 'stateFailed', empty: 'stateEmpty', skipped: 'stateSkipped' }[s] || 'stateWaiting')}${x.ms_ != null ? ` · ${duration(x.ms_)}` : ''}`);
    }));
  }

  setStandalone(q) {
    if (!q) return;
    this.standalone.replaceChildren(h('strong', `${t('standalone')}: `), document.createTextNode(q));
    this.standalone.hidden = false;
    this.trace.hidden = false;
  }

  // ---- endings

  note(node) { this.notes.append(node); }

  showError(err) {
    this.pending.hidden = true;
    this.note(errorBlock(err));
  }

  markStopped() {
    this.pending.hidden = true;
    this.note(h('p.notice.muted', t('stopped')));
  }

  finish() {
    this.done = true;
    this.pending.hidden = true;
    if (this.frame) { cancelAnimationFrame(this.frame); this.frame = 0; }
    this.paint();
    this.body.setAttribute('aria-busy', 'false');
    for (const a of Object.values(this.answerers)) {
      if (a.frame) { cancelAnimationFrame(a.frame); a.frame = 0; }
      if (a.status === 'started' || a.status === 'waiting') a.status = a.text ? 'done' : 'skipped';
      this.paintAnswerer(a);
    }
    this.paintActions();
  }

  paintActions() {
    const isLast = turns.length && turns[turns.length - 1] === this.turn;
    const v = this.turn.versions;
    const idx = v.indexOf(this);
    const items = [];
    if (v.length > 1) {
      items.push(h('span.versions',
        h('button.btn.icon.small', { type: 'button', 'aria-label': t('prevVersion'), title: t('prevVersion'), disabled: idx === 0, onclick: () => this.turn.show(idx - 1) }, icon('left')),
        h('span', { 'aria-label': t('version', { n: idx + 1, total: v.length }) }, `${idx + 1}/${v.length}`),
        h('button.btn.icon.small', { type: 'button', 'aria-label': t('nextVersion'), title: t('nextVersion'), disabled: idx === v.length - 1, onclick: () => this.turn.show(idx + 1) }, icon('right'))));
    }
    const copyBtn = h('button.btn.icon.small', { type: 'button', 'aria-label': t('copy'), title: t('copy'), 'data-action': 'copy' }, icon('copy'));
    copyBtn.addEventListener('click', async () => {
      if (await copyText(this.text)) {
        copyBtn.replaceChildren(icon('check'));
        copyBtn.title = t('copied');
        announce(t('copied'));
        setTimeout(() => { copyBtn.replaceChildren(icon('copy')); copyBtn.title = t('copy'); }, 1500);
      }
    });
    items.push(copyBtn);
    if (isLast) {
      items.push(h('button.btn.icon.small', {
        type: 'button', 'aria-label': t('regenerate'), title: t('regenerate'), 'data-action': 'regenerate',
        disabled: !!active, onclick: () => send(this.turn.question, { turn: this.turn }),
      }, icon('redo')));
    }
    const score = this.feedback ? this.feedback.score : null;
    for (const [kind, val] of [['up', 100], ['down', 0]]) {
      items.push(h('button.btn.icon.small.thumb', {
        type: 'button',
        'aria-label': t(kind === 'up' ? 'good' : 'bad'),
        title: this.messageId ? t(kind === 'up' ? 'good' : 'bad') : t('feedbackNeedsId'),
        'aria-pressed': score == null ? 'false' : String(kind === 'up' ? score >= 50 : score < 50),
        'data-action': `feedback-${kind}`,
        disabled: !this.messageId,
        onclick: () => askFeedback(this, val),
      }, icon(kind)));
    }
    this.actions.replaceChildren(...items);
    this.actions.hidden = false;
  }

  // fromStored fills the reply from a stored assistant message.
  fromStored(m) {
    const meta = m.metadata || {};
    const extra = meta.extra || {};
    this.messageId = m.message_id || '';
    this.feedback = meta.feedback || null;
    applyExtra(this, extra);
    this.text = m.content || '';
    this.setMeta({ model: meta.model, extractive: meta.extractive, usage: meta.usage, ms: extra.timings && extra.timings.total_ms });
    if (meta.interrupted) this.note(h('p.notice.muted', t('interrupted')));
    if (extra.error) this.note(errorBlock(String(extra.error)));
    this.finish();
  }
}

// applyExtra shows what a stored turn recorded beyond its text: the
// standalone question, the intermediate answers with their timings, and the
// sources.
function applyExtra(reply, extra) {
  const standalone = extra.standalone || extra.standalone_question || extra.condensed;
  if (typeof standalone === 'string' && standalone) reply.setStandalone(standalone);
  let answers = extra.answers || extra.intermediate || extra.intermediates;
  if (answers && !Array.isArray(answers) && typeof answers === 'object') {
    answers = Object.entries(answers).map(([k, v]) => ({ answerer: k, ...(typeof v === 'string' ? { text: v } : v) }));
  }
  const timings = extra.timings || extra.ms || {};
  if (Array.isArray(answers)) {
    for (const a of answers) {
      const name = a.answerer || a.from || a.name;
      if (!name) continue;
      const err = (a.timed_out ? `${t('timedOut')} ` : '') + errorText(a);
      reply.updateAnswerer(name, {
        status: err || a.state === 'failed' ? 'failed' : (a.state === 'skipped' ? 'skipped' : 'done'),
        error: err,
        text: a.text || '',
        empty: !!a.empty,
        // An answerer's sources carry mixchat's relevance in score, as
        // mix_chat's documents do (labelled with from).
        sources: (a.sources || a.docs || []).map((d) => normSource(d && typeof d === 'object' && !d.from ? { ...d, from: name } : d)),
        ms_: a.ms ?? a.elapsed_ms ?? (typeof timings[name] === 'number' ? timings[name] : null),
      });
    }
  }
  const docs = extra.docs || extra.sources;
  if (Array.isArray(docs)) reply.setSources(docs);
  for (const k of ['condense_error', 'fusion_error']) {
    if (extra[k]) reply.note(h('p.notice.muted', `${t(k === 'condense_error' ? 'condenseFailed' : 'fusionFailed')}: ${extra[k]}`));
  }
}

// ---------------------------------------------------------------- Turn

// Turn is one question with its answers: regenerating adds a version.
class Turn {
  constructor(question) {
    this.question = question;
    this.versions = [];
    this.current = -1;
    this.slot = h('div.reply-slot');
    this.bubble = h('div.bubble', question);
    this.el = h('section.turn',
      h('article.msg.user', { 'aria-label': t('you') },
        h('header.msg-head', h('span.who', t('you')),
          h('button.btn.icon.small.edit-question', {
            type: 'button', 'aria-label': t('editQuestion'), title: t('editQuestion'), 'data-action': 'edit-question',
            onclick: () => this.edit(),
          }, icon('edit'))),
        this.bubble),
      this.slot);
  }

  // edit turns the question into a form: the edited question is asked
  // again, as the next question of the conversation (what was asked and
  // answered stays, as the server keeps it).
  edit() {
    if (this.el.querySelector('.edit-form')) return;
    const input = h('textarea.edit-input', { rows: '3', 'aria-label': t('editQuestion') });
    input.value = this.question;
    const form = h('form.edit-form',
      input,
      h('div.edit-actions',
        h('button.btn.small', { type: 'button', onclick: () => form.replaceWith(this.bubble) }, t('cancel')),
        h('button.btn.small.primary', { type: 'submit' }, t('askAgain'))));
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      const q = input.value.trim();
      if (!q || active) return;
      form.replaceWith(this.bubble);
      send(q);
    });
    input.addEventListener('keydown', (e) => {
      if (e.key === 'Escape') form.replaceWith(this.bubble);
      else if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); form.requestSubmit(); }
    });
    this.bubble.replaceWith(form);
    input.focus();
  }

  add(reply) {
    this.versions.push(reply);
    this.show(this.versions.length - 1);
  }

  show(i) {
    this.current = i;
    this.slot.replaceChildren(this.versions[i].el);
    for (const r of this.versions) if (r.done) r.paintActions();
  }
}

// ---------------------------------------------------------------- view

function nearBottom() {
  return list.scrollHeight - list.scrollTop - list.clientHeight < 80;
}

function scrollToBottom() {
  list.scrollTop = list.scrollHeight;
}

// welcome is the empty conversation: what the modes do and, when the
// default knowledge bases suggest questions, those to try.
function welcome() {
  const questions = (app && app.questions) || [];
  const ex = questions.map((q) =>
    h('li', h('button.btn.chip', { type: 'button', onclick: () => send(q) }, q)));
  return h('div.welcome',
    h('h2', t('welcomeTitle')),
    h('p', t('welcomeBody')),
    ...(ex.length ? [h('p.muted', t('examples')), h('ul.examples', ex)] : []));
}

function showEmpty() {
  turns = [];
  list.replaceChildren(welcome());
}

function addTurn(turn) {
  const w = list.querySelector('.welcome');
  if (w) w.remove();
  const prev = turns[turns.length - 1];
  turns.push(turn);
  list.append(turn.el);
  if (prev) for (const r of prev.versions) if (r.done) r.paintActions();
}

// loadConversation shows a stored conversation: its turns from
// GET /conversations/:id/messages, consecutive turns with the same question
// as versions of one answer (that is what regenerate stores).
export async function loadConversation(id) {
  const seq = ++loadSeq;
  stopActive();
  turns = [];
  list.replaceChildren(h('p.loading.muted', { role: 'status' }, t('loading')));
  let conv;
  let msgs;
  try {
    [conv, msgs] = await Promise.all([
      api.get(`/conversations/${encodeURIComponent(id)}`),
      api.get(`/conversations/${encodeURIComponent(id)}/messages`),
    ]);
  } catch (err) {
    if (seq !== loadSeq) return;
    list.replaceChildren(err.status === 404 ? h('p.notice.muted', { role: 'alert' }, t('conversationGone')) : errorBlock(err));
    return;
  }
  if (seq !== loadSeq) return;
  app.conversation = conv;
  $('#chat-title').textContent = conv.name || t('untitled');
  const mode = MODE_OF_TYPE[conv.chat_type];
  if (mode && app.modeAvailable(mode)) app.setMode(mode);
  list.replaceChildren();
  const byTurn = new Map();
  for (const m of msgs.messages || []) {
    const k = m.turn_id;
    if (!byTurn.has(k)) byTurn.set(k, {});
    byTurn.get(k)[m.role === 'user' ? 'q' : 'a'] = m;
  }
  let last = null;
  for (const { q, a } of byTurn.values()) {
    if (!q) continue;
    let turn = last && last.question === q.content ? last : null;
    if (!turn) {
      turn = new Turn(q.content);
      addTurn(turn);
      last = turn;
    }
    const r = new Reply(turn);
    turn.add(r);
    if (a) r.fromStored(a);
    else r.finish();
  }
  if (!turns.length) showEmpty();
  else for (const tr of turns) tr.show(tr.current);
  scrollToBottom();
}

export function newConversation() {
  ++loadSeq;
  stopActive();
  app.conversation = null;
  $('#chat-title').textContent = t('newChat');
  showEmpty();
  $('#composer-input').focus();
}

// ---------------------------------------------------------------- sending

function stopActive() {
  if (active) active.controller.abort();
}

function setBusy(busy) {
  $('#send-btn').hidden = busy;
  $('#stop-btn').hidden = !busy;
  for (const tr of turns) for (const r of tr.versions) if (r.done) r.paintActions();
}

// requestFor builds the endpoint and body of a question in the current
// settings.
function requestFor(question, convId) {
  const [path, body] = baseRequest(question, convId);
  return [path, { ...body, ...settings.tuning(app.settings.mode) }];
}

function baseRequest(question, convId) {
  const s = app.settings;
  const model = s.model || undefined;
  switch (s.mode) {
    case 'llm':
      return ['/chat/chat', { query: question, conversation_id: convId, history_len: -1, stream: true, model_name: model }];
    case 'kb':
      return ['/chat/knowledge_base_chat', {
        query: question, conversation_id: convId, knowledge_base_name: s.kbs[0], knowledge_base_names: s.kbs,
        stream: true, model_name: model,
      }];
    case 'search':
      return ['/chat/search_engine_chat', { query: question, conversation_id: convId, search_engine_name: s.engine || undefined, stream: true, model_name: model }];
    default: {
      const answerers = ['llm'];
      if (s.kbs.length && app.features.kb) answerers.push('kb');
      if (app.features.search && s.engine) answerers.push('search');
      return ['/chat/mix_chat', {
        query: question, conversation_id: convId, history_len: -1, knowledge_base_names: s.kbs,
        knowledge_base_name: s.kbs[0], search_engine_name: s.engine || undefined, stream: true, model_name: model, answerers,
      }];
    }
  }
}

// onEvent applies one stream event to reply. It understands mix_chat's
// typed events and the Chatchat-style events of the other endpoints
// ({text}, {answer}, {docs}, and mixchat's final {done, error}).
function onEvent(reply, ev) {
  if (ev == null || typeof ev !== 'object') return;
  switch (ev.type) {
    case 'status': {
      // The rewrite of a follow-up and the fusion are steps, not answerers:
      // when one fails the server works around it, and the reply says so.
      if (ev.answerer === 'condense' || ev.answerer === 'fusion') {
        if (ev.state === 'failed') {
          const cause = (ev.timed_out ? `${t('timedOut')} ` : '') + (errorText(ev) || '');
          reply.note(h('p.notice.muted', `${t(ev.answerer === 'condense' ? 'condenseFailed' : 'fusionFailed')}${cause ? `: ${cause}` : ''}`));
        }
        return;
      }
      const patch = { status: ev.state || 'started' };
      if (typeof ev.ms === 'number') patch.ms_ = ev.ms;
      if (ev.state === 'failed') patch.error = (ev.timed_out ? `${t('timedOut')} ` : '') + (errorText(ev) || ev.reason || '');
      if (ev.empty) patch.empty = true;
      reply.updateAnswerer(ev.answerer, patch);
      return;
    }
    case 'answer': {
      const patch = { text: ev.text || '', status: 'done' };
      if (ev.empty) patch.empty = true;
      const srcs = ev.sources || ev.docs;
      if (Array.isArray(srcs)) patch.sources = srcs.map(normSource);
      if (typeof ev.ms === 'number') patch.ms_ = ev.ms;
      reply.updateAnswerer(ev.answerer, patch);
      return;
    }
    case 'answer_delta':
      // A piece of an intermediate answer as it is written; the whole
      // answer follows in an answer event.
      reply.growAnswerer(ev.answerer, ev.text);
      return;
    case 'standalone':
    case 'condense':
    case 'rewrite':
      reply.setStandalone(ev.text || ev.question || ev.standalone);
      return;
    case 'delta':
      reply.append(ev.text);
      return;
    case 'docs':
      reply.setSources(ev.docs || ev.sources);
      return;
    case 'done':
      reply.setMessageId(ev.message_id);
      reply.setMeta({ model: ev.model, extractive: ev.extractive, usage: ev.usage, ms: ev.ms ?? (ev.timings && ev.timings.total_ms) });
      if (ev.standalone) reply.setStandalone(ev.standalone);
      if (ev.error) reply.showError(ev.error);
      return;
    case 'error':
      reply.showError(errorText(ev) || 'error');
      return;
    default:
  }
  if (ev.standalone && typeof ev.standalone === 'string') reply.setStandalone(ev.standalone);
  if (typeof ev.text === 'string') reply.append(ev.text);
  if (typeof ev.answer === 'string') reply.append(ev.answer);
  if (ev.message_id) reply.setMessageId(ev.message_id);
  // Knowledge-base and search replies send Chatchat's Markdown docs and
  // mixchat's structured sources side by side: the structured ones win.
  if (Array.isArray(ev.sources)) reply.setSources(ev.sources);
  else if (Array.isArray(ev.docs)) reply.setSources(ev.docs);
  if (ev.empty === true) reply.note(h('p.notice.muted', t('noteEmptyKB')));
  if (Array.isArray(ev.warnings)) for (const w of ev.warnings) reply.note(h('p.notice.muted', String(w)));
  if (typeof ev.code === 'number' && ev.code !== 200 && typeof ev.msg === 'string') reply.showError(ev.msg);
  if (ev.done || ev.model) reply.setMeta({ model: ev.model, extractive: ev.extractive, usage: ev.usage });
  if (ev.error) reply.showError(errorText(ev));
}

function titleOf(question) {
  const s = question.replace(/\s+/g, ' ').trim();
  return s.length > 40 ? `${s.slice(0, 40)}…` : s;
}

// send asks question in the current settings; with opts.turn it asks again
// (regenerate) and adds the reply as a new version of that turn.
export async function send(question, opts = {}) {
  question = String(question || '').trim();
  if (!question || active) return;
  const s = app.settings;
  if (s.mode === 'kb' && !s.kbs.length) {
    app.flashOptions(t('needKB'));
    return;
  }
  $('#opt-kb').open = false;
  let turn = opts.turn;
  if (!turn) {
    turn = new Turn(question);
    addTurn(turn);
  }
  const reply = new Reply(turn);
  turn.add(reply);
  if (s.mode === 'mix') reply.useAnswerers(requestFor(question, '')[1].answerers);
  scrollToBottom();
  const controller = new AbortController();
  active = { controller, reply };
  setBusy(true);
  const started = performance.now();
  try {
    if (!app.conversation) {
      const conv = await api.post('/conversations', { name: titleOf(question), chat_type: CHAT_TYPE[s.mode] || 'mix_chat' }, { signal: controller.signal });
      app.conversation = conv;
      $('#chat-title').textContent = conv.name || t('untitled');
      app.conversationCreated(conv);
      await settings.created(conv.id);
    }
    const [path, body] = requestFor(question, app.conversation.id);
    await api.stream(path, body, (ev) => onEvent(reply, ev), { signal: controller.signal });
    if (!reply.meta.childNodes.length) reply.setMeta({ ms: performance.now() - started });
    if (!reply.messageId && !reply.notes.childNodes.length) reply.note(h('p.notice.muted', t('notStored')));
    announce(t('answerComplete'));
  } catch (err) {
    if (err.kind === 'abort') reply.markStopped();
    else reply.showError(err);
    announce(err.kind === 'abort' ? t('stopped') : t('errorTitle'));
  } finally {
    active = null;
    reply.finish();
    setBusy(false);
    app.conversationsChanged();
  }
}

// askFeedback opens the feedback dialog for reply and posts the rating.
function askFeedback(reply, score) {
  const dlg = $('#feedback-dialog');
  $('#feedback-title').textContent = t(score >= 50 ? 'feedbackGood' : 'feedbackBad');
  const reason = $('#feedback-reason');
  reason.value = '';
  dlg.returnValue = '';
  dlg.onclose = async () => {
    dlg.onclose = null;
    if (dlg.returnValue !== 'ok') return;
    try {
      await api.post('/chat/feedback', { message_id: reply.messageId, score, reason: reason.value.trim() });
      reply.feedback = { score, reason: reason.value.trim() };
      reply.paintActions();
      announce(t('feedbackThanks'));
      app.toast(t('feedbackThanks'));
    } catch (err) {
      reply.note(errorBlock(err));
    }
  };
  dlg.showModal();
  reason.focus();
}

// ---------------------------------------------------------------- setup

function autosize(ta) {
  ta.style.height = 'auto';
  ta.style.height = `${Math.min(ta.scrollHeight, 240)}px`;
}

export function initChat(a) {
  app = a;
  list = $('#messages');
  const input = $('#composer-input');
  const form = $('#composer');
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const q = input.value;
    if (!q.trim() || active) return;
    input.value = '';
    autosize(input);
    send(q);
  });
  input.addEventListener('keydown', (e) => {
    if (e.isComposing || e.keyCode === 229) return; // an input method is composing (Chinese, Japanese)
    if (e.key === 'Enter' && !e.shiftKey && !e.altKey && !e.ctrlKey && !e.metaKey) {
      e.preventDefault();
      form.requestSubmit();
    } else if (e.key === 'Escape' && active) {
      e.preventDefault();
      stopActive();
    }
  });
  input.addEventListener('input', () => autosize(input));
  $('#stop-btn').addEventListener('click', () => { stopActive(); input.focus(); });
  $('#feedback-cancel').addEventListener('click', () => $('#feedback-dialog').close('cancel'));
  $('#feedback-form').addEventListener('submit', (e) => {
    e.preventDefault();
    $('#feedback-dialog').close('ok');
  });
  showEmpty();
}

// relabel redraws language-dependent texts of the chat view.
export function relabel() {
  document.documentElement.dataset.lang = getLang();
  if (!app.conversation) {
    $('#chat-title').textContent = t('newChat');
    if (!turns.length && !list.querySelector('.loading, .notice')) showEmpty();
    return;
  }
  // Redraw the conversation in the new language (not while a reply streams).
  if (!active && !$('#view-chat').hidden) loadConversation(app.conversation.id);
}

export function isBusy() { return !!active; }
