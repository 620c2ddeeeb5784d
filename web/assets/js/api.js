// The HTTP API client: JSON requests, Server-Sent-Event streams read from
// fetch, and multipart uploads with progress. Every failure becomes an
// APIError saying what kind it is, so the interface can tell "server
// unreachable" from "the model failed" from "you asked for something wrong".

import { getLang } from './i18n.js';

export class APIError extends Error {
  // kind: 'network' (no answer from the server), 'http' (an error status or
  // an error envelope), 'upstream' (the model or search provider behind the
  // server failed), 'auth' (the server wants an API key, or refused the one
  // given: 401), 'abort' (the user stopped it).
  constructor(message, { kind = 'http', status = 0, upstreamStatus = 0, code = 0 } = {}) {
    super(message);
    this.name = 'APIError';
    this.kind = kind;
    this.status = status;
    this.upstreamStatus = upstreamStatus;
    this.code = code;
  }
}

// listeners told when the server stops or starts answering.
const reach = new Set();
export function onReachability(fn) { reach.add(fn); }
function reachable(ok) { for (const fn of reach) fn(ok); }

// ---------------------------------------------------------------- API key

// A server with authentication on (auth.enabled) wants
// "Authorization: Bearer mx-..." on every API request. The key the user
// gives is kept in localStorage when they ask to be remembered, else in
// sessionStorage (this tab only), and sent with every request.
const KEY_NAME = 'mixchat.apiKey';

function readKey() {
  try { return localStorage.getItem(KEY_NAME) || sessionStorage.getItem(KEY_NAME) || ''; } catch { return ''; }
}

let apiKey = readKey();

export function getKey() { return apiKey; }

// setKey keeps key for the next requests ('' forgets it); remember keeps it
// across browser restarts.
export function setKey(key, remember) {
  apiKey = String(key || '').trim();
  try {
    localStorage.removeItem(KEY_NAME);
    sessionStorage.removeItem(KEY_NAME);
    if (apiKey) (remember ? localStorage : sessionStorage).setItem(KEY_NAME, apiKey);
  } catch { /* private mode: keep it for this page */ }
}

// withKey adds the API key and the interface's language, in which the
// server writes the messages of replies that have no question to follow
// (an upload's per-file errors).
function withKey(headers) {
  if (apiKey) headers.Authorization = `Bearer ${apiKey}`;
  headers['Accept-Language'] = getLang() === 'zh' ? 'zh-CN,zh;q=0.9' : 'en';
  return headers;
}

// listeners told when the server answers 401: a key is needed, or the one
// sent is invalid or revoked.
const authWanted = new Set();
export function onAuthRequired(fn) { authWanted.add(fn); }
function needAuth(msg) { for (const fn of authWanted) fn(msg); }

function isAbort(err) {
  return err && (err.name === 'AbortError' || err.kind === 'abort');
}

// errorMessage extracts the message of an error body: mixchat's {code, msg},
// Chatchat's {code, msg}, FastAPI's {detail}, OpenAI's {error: {message}}.
export function errorMessage(body) {
  if (body == null) return '';
  if (typeof body === 'string') return body;
  if (typeof body.msg === 'string' && body.msg) return body.msg;
  if (typeof body.error === 'string' && body.error) return body.error;
  if (body.error && typeof body.error.message === 'string') return body.error.message;
  if (typeof body.message === 'string') return body.message;
  if (typeof body.detail === 'string') return body.detail;
  if (Array.isArray(body.detail)) return body.detail.map((d) => d.msg || JSON.stringify(d)).join('; ');
  return '';
}

function errorFromBody(status, body, fallback) {
  const upstreamStatus = body && typeof body.upstream_status === 'number' ? body.upstream_status : 0;
  let kind = upstreamStatus || status === 502 || status === 504 ? 'upstream' : 'http';
  if (status === 401) {
    kind = 'auth';
    needAuth(errorMessage(body) || fallback || '');
  }
  return new APIError(errorMessage(body) || fallback || `HTTP ${status}`, { kind, status, upstreamStatus, code: body && body.code });
}

async function doFetch(path, init) {
  let res;
  init.headers = withKey({ ...(init.headers || {}) });
  try {
    res = await fetch(path, init);
  } catch (err) {
    if (isAbort(err)) throw new APIError('stopped', { kind: 'abort' });
    reachable(false);
    throw new APIError(err.message || 'network error', { kind: 'network' });
  }
  reachable(true);
  return res;
}

async function readJSON(res) {
  const text = await res.text();
  if (!text) return null;
  try { return JSON.parse(text); } catch { return text; }
}

// envelopeError reports a Chatchat-style {code, msg} body whose code says
// failure even though the HTTP status is 200.
function envelopeError(body) {
  if (body && typeof body === 'object' && !Array.isArray(body) && typeof body.code === 'number' &&
      body.code !== 200 && body.code !== 0 && typeof body.msg === 'string') {
    return new APIError(body.msg, { kind: 'http', status: body.code, code: body.code });
  }
  return null;
}

// request sends a JSON request and returns the decoded reply; error
// statuses and error envelopes throw APIError.
export async function request(method, path, body, { signal } = {}) {
  const init = { method, headers: { Accept: 'application/json' }, signal };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await doFetch(path, init);
  const data = await readJSON(res);
  if (!res.ok) throw errorFromBody(res.status, data, res.statusText);
  const env = envelopeError(data);
  if (env) throw env;
  return data;
}

export const get = (path, opts) => request('GET', path, undefined, opts);
export const post = (path, body, opts) => request('POST', path, body, opts);

// stream POSTs body and calls onEvent with every JSON event of the
// Server-Sent-Event reply (a plain JSON reply counts as one event). It
// resolves when the stream ends; stopping through signal rejects with an
// APIError of kind 'abort'.
export async function stream(path, body, onEvent, { signal } = {}) {
  const res = await doFetch(path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' },
    body: JSON.stringify(body),
    signal,
  });
  if (!res.ok) throw errorFromBody(res.status, await readJSON(res), res.statusText);
  const ctype = res.headers.get('Content-Type') || '';
  if (!ctype.includes('text/event-stream')) {
    const data = await readJSON(res);
    const env = envelopeError(data);
    if (env) throw env;
    onEvent(data);
    return;
  }
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  const dispatch = (block) => {
    const data = block.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).replace(/^ /, '')).join('\n');
    if (!data || data === '[DONE]') return;
    let ev;
    try { ev = JSON.parse(data); } catch { ev = { text: data }; }
    onEvent(ev);
  };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      let i;
      while ((i = buf.search(/\r?\n\r?\n/)) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i).replace(/^\r?\n\r?\n/, '');
        dispatch(block);
      }
    }
    if (buf.trim()) dispatch(buf);
  } catch (err) {
    if (isAbort(err) || (signal && signal.aborted)) throw new APIError('stopped', { kind: 'abort' });
    if (err instanceof APIError) throw err;
    throw new APIError(err.message || 'stream broken', { kind: 'network' });
  }
}

// upload POSTs a multipart form with XMLHttpRequest, the one browser API
// that reports upload progress: onProgress(fraction) while the bytes go
// out, onProgress(1) when they are all sent and the server is working.
export function upload(path, form, onProgress, { signal } = {}) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', path);
    xhr.setRequestHeader('Accept', 'application/json');
    if (apiKey) xhr.setRequestHeader('Authorization', `Bearer ${apiKey}`);
    xhr.setRequestHeader('Accept-Language', withKey({})['Accept-Language']);
    xhr.upload.onprogress = (e) => { if (e.lengthComputable) onProgress(e.loaded / e.total); };
    xhr.upload.onload = () => onProgress(1);
    xhr.onerror = () => { reachable(false); reject(new APIError('network error', { kind: 'network' })); };
    xhr.onabort = () => reject(new APIError('stopped', { kind: 'abort' }));
    xhr.onload = () => {
      reachable(true);
      let data = null;
      try { data = xhr.responseText ? JSON.parse(xhr.responseText) : null; } catch { data = xhr.responseText; }
      if (xhr.status < 200 || xhr.status >= 300) { reject(errorFromBody(xhr.status, data, xhr.statusText)); return; }
      resolve(data);
    };
    if (signal) signal.addEventListener('abort', () => xhr.abort(), { once: true });
    xhr.send(form);
  });
}

// authHeaders are the headers every request carries: the API key and
// the interface's language.
export function authHeaders() { return withKey({}); }

// download fetches path with the API key and saves the reply as a file
// named name: a plain link cannot carry the key. The type is forced to
// octet-stream so the browser saves the file and never renders it as a
// page of this site.
export async function download(path, name) {
  const res = await doFetch(path, { method: 'GET' });
  if (!res.ok) throw errorFromBody(res.status, await readJSON(res), res.statusText);
  const blob = new Blob([await res.arrayBuffer()], { type: 'application/octet-stream' });
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}
