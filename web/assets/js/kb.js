// The knowledge-base manager: list, create and delete knowledge bases,
// upload several files at once by drag and drop (progress bar, per-file
// errors), list and delete files, and try a query to see the retrieved
// chunks with their scores. It speaks the Chatchat-compatible
// /knowledge_base/* API ({code, msg, data} envelopes).

import * as api from './api.js';
import { h, $, icon, confirmDialog, announce } from './dom.js';
import { t, getLang } from './i18n.js';
import { normSource } from './chat.js';

let app;
let current = '';
let lastKB = '';

// names extracts knowledge-base or file names from a list reply: strings,
// or objects with a name field.
function names(data) {
  const arr = Array.isArray(data) ? data : (data && (data.data || data.files || data.knowledge_bases)) || [];
  return (Array.isArray(arr) ? arr : []).map((x) => (typeof x === 'string' ? x : x.kb_name || x.knowledge_base_name || x.file_name || x.name || '')).filter(Boolean);
}

export async function loadKBs() {
  const data = await api.get('/knowledge_base/list_knowledge_bases');
  app.kbs = names(data);
  return app.kbs;
}

function paintList() {
  const ul = $('#kb-list');
  ul.replaceChildren(...app.kbs.map((name) => h('li', { class: name === current ? 'current' : null },
    h('a', { href: `#/kb/${encodeURIComponent(name)}`, 'aria-current': name === current ? 'page' : null }, name))));
  const empty = $('#kb-list-empty');
  empty.hidden = app.kbs.length > 0;
  empty.textContent = app.features.kbManage ? t('emptyKBs') : t('kbUnavailable');
}

export async function showKB(name) {
  current = name || '';
  $('#kb-create-error').hidden = true;
  if (!app.features.kbManage) {
    paintList();
    $('#kb-panel').hidden = true;
    $('#kb-none').hidden = false;
    $('#kb-none').textContent = t('kbUnavailable');
    return;
  }
  try {
    await loadKBs();
  } catch (err) {
    $('#kb-none').textContent = err.message;
  }
  if (!current && app.kbs.includes(lastKB)) {
    // Back to the knowledge base looked at last.
    current = lastKB;
    history.replaceState(null, '', `#/kb/${encodeURIComponent(current)}`);
  }
  paintList();
  const known = current && app.kbs.includes(current);
  $('#kb-panel').hidden = !known;
  $('#kb-none').hidden = !!known;
  if (!known) {
    $('#kb-none').textContent = t('kbPick');
    return;
  }
  lastKB = current;
  $('#kb-detail-title').textContent = current;
  $('#upload-status').hidden = true;
  $('#kb-chunks').replaceChildren();
  $('#kb-try-error').hidden = true;
  $('#rebuild-status').hidden = true;
  await Promise.all([loadFiles(), loadInfo()]);
}

// indexingTimer reloads the facts while the index links in the background.
let indexingTimer = 0;

// loadInfo shows the current knowledge base's description and what its
// index is made of.
async function loadInfo() {
  const name = current;
  try {
    const data = await api.get('/knowledge_base/list_knowledge_bases?detail=true');
    const info = ((data && data.data) || []).find((x) => x && x.kb_name === name);
    if (!info || name !== current) return;
    $('#kb-info').value = info.kb_info || '';
    showEmbedder(info.embed_model || '', (data && data.embed_model) || '');
    showProfiles(info.profile || '', (data && data.profiles) || []);
    let facts = t('kbFacts', { files: info.file_count ?? '?', chunks: info.docs_count ?? '?', embed: info.embed_model || '?', vs: info.vs_type || '?' });
    if (info.indexing) {
      // The vector index links an upload's vectors in the background
      // (they are searched meanwhile): say so until it is done.
      facts += ' · ' + t('kbIndexing', { n: info.pending_vectors ?? 0 });
      clearTimeout(indexingTimer);
      indexingTimer = setTimeout(() => { if (name === current) loadInfo(); }, 2000);
    }
    $('#kb-index-facts').textContent = facts;
  } catch (err) {
    $('#kb-index-facts').textContent = err.message;
  }
}

// showEmbedder offers the embedding models a rebuild can use: the one the
// base was indexed with and the one the server embeds with now. When they
// differ the base cannot be searched until it is rebuilt with the
// server's, which the select then proposes.
function showEmbedder(indexed, server) {
  const sel = $('#kb-embed-model');
  const names = [...new Set([indexed, server].filter(Boolean))];
  sel.replaceChildren(...names.map((n) => h('option', { value: n }, n)));
  const stale = indexed && server && indexed !== server;
  sel.value = stale ? server : (indexed || server);
  sel.disabled = names.length < 2;
  const note = $('#kb-embed-note');
  note.hidden = !stale;
  note.textContent = stale ? t('embedStale', { indexed, server }) : '';
}

// showProfiles offers the structure profiles the server knows (the names
// its documents' parts go by, docs/structure.md), the base's selected.
function showProfiles(named, known) {
  const sel = $('#kb-profile');
  const names = [...new Set([...known, named].filter(Boolean))];
  sel.replaceChildren(h('option', { value: '' }, t('noProfile')), ...names.map((n) => h('option', { value: n }, n)));
  sel.value = named;
}

async function saveInfo(e) {
  e.preventDefault();
  try {
    await api.post('/knowledge_base/update_info', { knowledge_base_name: current, kb_info: $('#kb-info').value.trim(), profile: $('#kb-profile').value });
    announce(t('saved'));
    app.toast(t('saved'));
  } catch (err) {
    app.toast(err.message);
  }
}

// rebuild re-indexes the current knowledge base from its files (with the
// chunk size and overlap given), showing each file as it is done.
async function rebuild() {
  const name = current;
  if (!(await confirmDialog(t('confirmRebuild', { name }), t('rebuild')))) return;
  const body = { knowledge_base_name: name, allow_empty_kb: true };
  const size = Number($('#kb-chunk-size').value);
  const overlap = Number($('#kb-chunk-overlap').value);
  if ($('#kb-chunk-size').value !== '' && size > 0) body.chunk_size = size;
  if ($('#kb-chunk-overlap').value !== '' && overlap >= 0) body.chunk_overlap = overlap;
  if ($('#kb-embed-model').value) body.embed_model = $('#kb-embed-model').value;
  const status = $('#rebuild-status');
  const bar = $('#rebuild-progress');
  const label = $('#rebuild-label');
  const results = $('#rebuild-results');
  status.hidden = false;
  bar.value = 0;
  results.replaceChildren();
  label.textContent = t('rebuilding', { done: 0, total: '…' });
  $('#kb-rebuild').disabled = true;
  let total = 0;
  try {
    await api.stream('/knowledge_base/recreate_vector_store', body, (ev) => {
      if (!ev) return;
      if (typeof ev.total === 'number') total = ev.total;
      if (typeof ev.finished === 'number' && total) {
        bar.value = Math.round((ev.finished / total) * 100);
        label.textContent = t('rebuilding', { done: ev.finished, total });
      }
      if (typeof ev.code === 'number' && ev.code !== 200 && ev.msg) results.append(h('li.bad', ev.msg));
    });
    bar.value = 100;
    label.textContent = t('rebuilt', { total });
    announce(label.textContent);
  } catch (err) {
    results.append(h('li.bad', err.message));
  } finally {
    $('#kb-rebuild').disabled = false;
  }
  if (name === current) { loadFiles(); loadInfo(); }
}

// showChunks lists a file's chunks, each editable and deletable. A change
// re-indexes the file with its chunks as given (update_docs with docs), so
// the next search sees it.
async function showChunks(file) {
  const kbName = current;
  const list = $('#chunk-list');
  $('#chunks-title').textContent = t('chunksOf', { file });
  let docs;
  try {
    const data = await api.post('/knowledge_base/search_docs', { knowledge_base_name: kbName, file_name: file, query: '' });
    docs = (Array.isArray(data) ? data : (data && data.data) || []).map((d) => ({ page_content: d.page_content || '', metadata: d.metadata || {} }));
  } catch (err) {
    app.toast(err.message);
    return;
  }
  const save = async (next) => {
    try {
      const res = await api.post('/knowledge_base/update_docs', { knowledge_base_name: kbName, file_names: [file], docs: { [file]: next } });
      const failed = res && res.data && res.data.failed_files;
      if (failed && Object.keys(failed).length) throw new Error(Object.values(failed).join('; '));
      docs = next;
      announce(t('saved'));
      paint();
      if (kbName === current) { loadFiles(); loadInfo(); }
    } catch (err) {
      app.toast(err.message);
    }
  };
  const paint = () => {
    list.replaceChildren(...docs.map((d, i) => {
      const area = h('textarea', { rows: '4', 'aria-label': `${t('chunksOf', { file })} ${i + 1}` });
      area.value = d.page_content;
      return h('li.chunk',
        area,
        h('div.row',
          h('button.btn.small.danger', { type: 'button', 'data-action': 'delete-chunk', onclick: () => save(docs.filter((_, j) => j !== i)) }, t('deleteChunk')),
          h('button.btn.small.primary', { type: 'button', 'data-action': 'save-chunk', onclick: () => save(docs.map((x, j) => (j === i ? { ...x, page_content: area.value } : x))) }, t('saveChunk'))));
    }));
  };
  paint();
  const dlg = $('#chunks-dialog');
  if (!dlg.open) dlg.showModal();
}

// fileSize is a byte count for people.
function fileSize(n) {
  if (!(n >= 0)) return '';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

// fileDate is when a file was last indexed, in the interface's language.
function fileDate(s) {
  const d = new Date(s);
  if (!s || Number.isNaN(d.getTime()) || d.getFullYear() < 2000) return '';
  return d.toLocaleString(getLang() === 'zh' ? 'zh-CN' : 'en', { dateStyle: 'medium', timeStyle: 'short' });
}

// loadFiles shows the current knowledge base's files as a table: size,
// chunk count, when it was indexed, and whether it is searchable.
async function loadFiles() {
  const body = $('#kb-files');
  let files = [];
  try {
    const data = await api.get(`/knowledge_base/list_files?knowledge_base_name=${encodeURIComponent(current)}&detail=true`);
    const arr = Array.isArray(data) ? data : (data && data.data) || [];
    files = arr.map((x) => (typeof x === 'string' ? { file_name: x } : x)).filter((x) => x.file_name);
  } catch (err) {
    body.replaceChildren(h('tr', h('td.form-error', { colspan: '6' }, err.message)));
    return;
  }
  body.replaceChildren(...files.map((f) => {
    const chunks = typeof f.docs_count === 'number' ? f.docs_count : null;
    const ok = chunks === null || chunks > 0;
    return h('tr.file',
      h('td.name', h('span.file-cell', icon('file'), fileLink(f.file_name))),
      h('td.num', fileSize(f.file_size)),
      h('td.num', chunks === null ? '' : h('button.link', { type: 'button', 'data-chunks': f.file_name, 'aria-label': t('showChunks', { file: f.file_name }), onclick: () => showChunks(f.file_name) }, String(chunks))),
      h('td.date', fileDate(f.update_time || f.file_mtime)),
      h(`td.status${ok ? '' : '.bad'}`, ok ? t('fileIndexed') : t('fileNoChunks')),
      h('td', h('button.btn.icon.small', { type: 'button', 'aria-label': `${t('delete')}: ${f.file_name}`, title: t('delete'), onclick: () => deleteFile(f.file_name) }, icon('trash'))));
  }));
  $('#kb-files-empty').hidden = files.length > 0;
}

// fileLink links to a file of the current knowledge base: a preview in a
// new tab, or, when requests need an API key (which a plain link cannot
// send), a download through fetch.
function fileLink(f) {
  const path = `/knowledge_base/download_doc?knowledge_base_name=${encodeURIComponent(current)}&file_name=${encodeURIComponent(f)}`;
  return h('a.file-name', {
    href: `${path}&preview=true`,
    target: '_blank',
    rel: 'noopener',
    onclick: (e) => {
      if (!api.getKey()) return;
      e.preventDefault();
      api.download(path, f).catch((err) => app.toast(err.message));
    },
  }, f);
}

async function deleteFile(f) {
  if (!(await confirmDialog(t('confirmDeleteFile', { name: f }), t('delete')))) return;
  try {
    await api.post('/knowledge_base/delete_docs', { knowledge_base_name: current, file_names: [f], delete_content: true, not_refresh_vs_cache: false });
  } catch (err) {
    app.toast(err.message);
  }
  announce(t('deleted'));
  loadFiles();
}

async function createKB(e) {
  e.preventDefault();
  const input = $('#kb-new-name');
  const errEl = $('#kb-create-error');
  const name = input.value.trim();
  errEl.hidden = true;
  if (!name) return;
  try {
    await api.post('/knowledge_base/create_knowledge_base', { knowledge_base_name: name });
  } catch (err) {
    errEl.textContent = err.message;
    errEl.hidden = false;
    return;
  }
  input.value = '';
  announce(t('created'));
  app.kbsChanged();
  location.hash = `#/kb/${encodeURIComponent(name)}`;
}

async function deleteKB() {
  if (!(await confirmDialog(t('confirmDeleteKB', { name: current }), t('delete')))) return;
  try {
    // Chatchat's delete_knowledge_base takes the bare name as its JSON body.
    await api.post('/knowledge_base/delete_knowledge_base', current);
  } catch (err) {
    app.toast(err.message);
    return;
  }
  announce(t('deleted'));
  app.kbsChanged();
  location.hash = '#/kb';
}

// uploadFiles sends files in one multipart request and lists each file's
// outcome: added, or the reason the server gave.
async function uploadFiles(files) {
  files = [...files];
  if (!files.length || !current) return;
  const box = $('#upload-status');
  const bar = $('#upload-progress');
  const label = $('#upload-progress-label');
  const results = $('#upload-results');
  box.hidden = false;
  results.replaceChildren(...files.map((f) => h('li.pending', { 'data-file': f.name }, h('span.file-name', f.name), h('span.muted', ` ${(f.size / 1024).toFixed(1)} KB`))));
  bar.value = 0;
  bar.max = 100;
  label.textContent = t('uploading', { n: files.length, pct: 0 });
  const form = new FormData();
  for (const f of files) form.append('files', f, f.name);
  form.append('knowledge_base_name', current);
  form.append('override', 'true');
  form.append('to_vector_store', 'true');
  let data;
  try {
    data = await api.upload('/knowledge_base/upload_docs', form, (frac) => {
      if (frac >= 1) {
        bar.removeAttribute('value'); // indeterminate while the server reads and indexes
        label.textContent = t('processing', { n: files.length });
      } else {
        bar.value = Math.round(frac * 100);
        label.textContent = t('uploading', { n: files.length, pct: Math.round(frac * 100) });
      }
    });
  } catch (err) {
    bar.value = 0;
    label.textContent = t('uploadFailed', { msg: err.message });
    for (const li of results.children) { li.className = 'bad'; }
    return;
  }
  bar.value = 100;
  const failed = (data && data.data && data.data.failed_files) || (data && data.failed_files) || {};
  const skipped = new Set((data && data.data && data.data.skipped_files) || []);
  const failedMap = Array.isArray(failed)
    ? Object.fromEntries(failed.map((x) => (typeof x === 'string' ? [x, ''] : [x.file_name || x.name || x.file, x.reason || x.error || x.msg || ''])))
    : failed;
  let bad = 0;
  for (const li of results.children) {
    const name = li.dataset.file;
    if (Object.prototype.hasOwnProperty.call(failedMap, name)) {
      bad++;
      li.className = 'bad';
      li.append(h('span.reason', ` — ${failedMap[name] || t('stateFailed')}`));
    } else {
      li.className = 'ok';
      li.append(h('span.reason', ` — ${t(skipped.has(name) ? 'fileUnchanged' : 'fileOK')}`));
    }
  }
  label.textContent = t('uploadDone', { ok: files.length - bad, failed: bad });
  announce(label.textContent);
  loadFiles();
}

async function tryQuery(e) {
  e.preventDefault();
  const q = $('#kb-try-input').value.trim();
  const k = Number($('#kb-try-k').value) || 5;
  const out = $('#kb-chunks');
  const errEl = $('#kb-try-error');
  errEl.hidden = true;
  if (!q) return;
  out.replaceChildren(h('li.muted', t('loading')));
  let data;
  try {
    data = await api.post('/knowledge_base/search_docs', { query: q, knowledge_base_name: current, top_k: k, min_relevance: 0 });
  } catch (err) {
    out.replaceChildren();
    errEl.textContent = err.message;
    errEl.hidden = false;
    return;
  }
  const docs = Array.isArray(data) ? data : (data && (Array.isArray(data.data) ? data.data : (data.data && data.data.docs) || data.docs)) || [];
  if (!docs.length) {
    out.replaceChildren(h('li.muted', t('noChunks')));
    return;
  }
  out.replaceChildren(...docs.map((d) => {
    const s = normSource(d);
    return h('li.chunk',
      h('div.chunk-head',
        s.relevance !== undefined ? h('span.score', { title: t('relevanceHelp') }, `${t('relevance')} ${s.relevance.toFixed(3)}`) : null,
        s.distance !== undefined ? h('span.score', { title: t('distanceHelp') }, `${t('distance')} ${s.distance.toFixed(3)}`) : null,
        s.title ? h('span.muted', t('chunkFrom', { file: s.title })) : null),
      h('p.chunk-text', s.snippet));
  }));
}

export function initKB(a) {
  app = a;
  $('#kb-create').addEventListener('submit', createKB);
  $('#kb-delete').addEventListener('click', deleteKB);
  $('#kb-try').addEventListener('submit', tryQuery);
  $('#kb-info-form').addEventListener('submit', saveInfo);
  $('#kb-rebuild').addEventListener('click', rebuild);
  const input = $('#kb-file-input');
  input.addEventListener('change', () => { uploadFiles(input.files); input.value = ''; });
  const zone = $('#dropzone');
  for (const ev of ['dragenter', 'dragover']) {
    zone.addEventListener(ev, (e) => { e.preventDefault(); zone.classList.add('over'); });
  }
  for (const ev of ['dragleave', 'drop']) {
    zone.addEventListener(ev, () => zone.classList.remove('over'));
  }
  zone.addEventListener('drop', (e) => {
    e.preventDefault();
    if (e.dataTransfer && e.dataTransfer.files.length) uploadFiles(e.dataTransfer.files);
  });
  // A file dropped outside the zone must not navigate away from the app.
  window.addEventListener('dragover', (e) => e.preventDefault());
  window.addEventListener('drop', (e) => e.preventDefault());
}
