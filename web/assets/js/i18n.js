// Interface strings in Chinese and English. The language follows the
// browser (navigator.languages) until the user picks one, which is kept in
// localStorage.

const KEY = 'mixchat.lang';

const en = {
  skipToInput: 'Skip to the question box',
  conversations: 'Conversations',
  newChat: 'New chat',
  searchConversations: 'Search conversations',
  knowledgeBases: 'Knowledge bases',
  menu: 'Menu',
  tagline: 'domain expert Q&A',
  language: 'Language',
  retry: 'Retry',
  apiKeyButton: 'API key',
  apiKey: 'API key',
  enterKey: 'Enter API key',
  keyTitle: 'This server needs an API key',
  keyHelp: 'Ask the server\'s administrator for a key (they create one with: mixchat keys create --user NAME).',
  keyRemember: 'Remember it on this browser',
  keySave: 'Use this key',
  keyForget: 'Forget the key',
  keyNeeded: 'This server asks for an API key.',
  keyRefused: 'The server refused the key: {msg}',
  dismiss: 'Dismiss',
  extractiveTitle: 'Offline model.',
  extractiveBody: 'No LLM endpoint is configured, so replies are sentences quoted from the conversation, documents and search results (extractive), not generated text. Set MIXCHAT_LLM_BASE_URL, MIXCHAT_LLM_API_KEY and MIXCHAT_LLM_MODEL and restart for a generative model.',
  mode: 'Mode',
  modeMix: 'Mix: all three',
  modeLLM: 'LLM only',
  modeKB: 'Knowledge base',
  modeSearch: 'Search',
  unavailable: 'not available on this server',
  knowledgeBase: 'Knowledge base',
  searchEngine: 'Search engine',
  model: 'Model',
  question: 'Your question',
  askPlaceholder: 'Ask the expert…',
  send: 'Send',
  stop: 'Stop',
  composerHint: 'Enter sends · Shift+Enter for a new line · Esc stops',
  newKBName: 'New knowledge base',
  kbNamePlaceholder: 'name, e.g. hr-policies',
  create: 'Create',
  kbPick: 'Pick a knowledge base, or create one.',
  deleteKB: 'Delete knowledge base',
  uploadFiles: 'Upload files',
  dropHere: 'Drop files here, or',
  chooseFiles: 'Choose files',
  fileTypes: 'txt, md, html, pdf, docx, csv, json — several at once',
  files: 'Files',
  noFiles: 'No files yet.',
  tryQuery: 'Try a query',
  query: 'Query',
  tryPlaceholder: 'e.g. a question your documents answer',
  searchBtn: 'Search',
  feedbackReason: 'Reason (optional)',
  cancel: 'Cancel',
  sendFeedback: 'Send feedback',
  delete: 'Delete',
  rename: 'Rename',
  save: 'Save',
  untitled: 'Untitled',
  noConversations: 'No conversations yet.',
  noMatches: 'No conversation matches.',
  welcomeTitle: 'Ask the expert',
  welcomeBody: 'In Mix mode each question is answered three ways — by the language model with the conversation\'s memory, from your knowledge bases, and from search — and the answers are fused into one, with citations. The other modes ask one of them alone.',
  examples: 'Try:',
  you: 'You',
  assistant: 'Expert',
  thinking: 'Thinking…',
  loading: 'Loading…',
  copy: 'Copy',
  copied: 'Copied',
  regenerate: 'Regenerate',
  good: 'Good answer',
  bad: 'Bad answer',
  feedbackGood: 'What was good about this answer?',
  feedbackBad: 'What was wrong with this answer?',
  feedbackThanks: 'Thanks for the feedback',
  feedbackNeedsId: 'This reply was not stored, so it cannot be rated.',
  notStored: 'This reply was not saved in the conversation: the server does not keep this mode\'s replies.',
  version: 'Version {n} of {total}',
  prevVersion: 'Previous version',
  nextVersion: 'Next version',
  sources: 'Sources',
  howMade: 'How this answer was made',
  standalone: 'Question as understood',
  answererLLM: 'LLM (with memory)',
  answererKB: 'Knowledge base',
  answererSearch: 'Web search',
  answererLocalSearch: 'Local files search',
  localFiles: 'local files',
  stateWaiting: 'waiting',
  stateStarted: 'working…',
  stateDone: 'done',
  stateFailed: 'failed',
  stateEmpty: 'found nothing',
  stateSkipped: 'off',
  noteFailed: 'This answerer failed: {msg}',
  noteEmpty: 'Nothing relevant was found; the answer does not rest on this source.',
  timedOut: 'Timed out.',
  condenseFailed: 'The follow-up question could not be rewritten; the question was used as asked',
  fusionFailed: 'The answers could not be fused; the best single answer is shown',
  stopped: 'Stopped. The part shown was kept in the conversation.',
  interrupted: 'This reply was cut short.',
  errorTitle: 'The answer failed',
  upstreamError: 'The model service returned an error (HTTP {status}).',
  serverError: 'The server returned an error (HTTP {status}).',
  unreachable: 'Cannot reach the mixchat server. Is it running? Retrying…',
  networkError: 'The connection to the server was lost.',
  extractiveBadge: 'extractive',
  usage: '{p} + {c} tokens',
  noKB: 'No knowledge base yet',
  noKBSelected: 'none selected',
  kbCount: '{n} selected',
  manageKB: 'Manage knowledge bases…',
  needKB: 'Pick a knowledge base for this mode (or create one under Knowledge bases).',
  emptyKBs: 'No knowledge base yet: create one above.',
  confirmDeleteConv: 'Delete the conversation “{name}” and all its messages?',
  confirmDeleteKB: 'Delete the knowledge base “{name}” with all its files?',
  confirmDeleteFile: 'Delete “{name}” from this knowledge base?',
  uploading: 'Uploading {n} file(s)… {pct}%',
  processing: 'Reading and indexing {n} file(s)…',
  uploadDone: 'Done: {ok} added, {failed} failed.',
  uploadFailed: 'Upload failed: {msg}',
  fileOK: 'added',
  fileUnchanged: 'unchanged, kept as it was',
  score: 'score',
  relevance: 'relevance',
  distance: 'distance',
  relevanceHelp: 'How well the text matches, from 0 to 1: higher is better.',
  distanceHelp: 'Chatchat-style distance from 0 to 2: smaller is closer.',
  noteEmptyKB: 'Nothing relevant was found in the knowledge base: this answer does not rest on it.',
  noChunks: 'No chunk passes the threshold.',
  chunkFrom: 'from {file}',
  kbUnavailable: 'Knowledge bases are not available on this server yet.',
  conversationGone: 'This conversation no longer exists.',
  answerComplete: 'Answer complete.',
  deleted: 'Deleted.',
  created: 'Created.',
  ms: '{n} ms',
  s: '{n} s',
  today: 'Today',
};

const zh = {
  skipToInput: '跳到提问框',
  conversations: '对话',
  newChat: '新对话',
  searchConversations: '搜索对话',
  knowledgeBases: '知识库',
  menu: '菜单',
  tagline: '领域专家问答',
  language: '语言',
  retry: '重试',
  apiKeyButton: 'API 密钥',
  apiKey: 'API 密钥',
  enterKey: '输入 API 密钥',
  keyTitle: '这个服务器需要 API 密钥',
  keyHelp: '请向服务器管理员索取密钥（管理员的创建命令：mixchat keys create --user 用户名）。',
  keyRemember: '在这个浏览器上记住它',
  keySave: '使用这个密钥',
  keyForget: '忘掉这个密钥',
  keyNeeded: '这个服务器需要 API 密钥。',
  keyRefused: '服务器拒绝了这个密钥：{msg}',
  dismiss: '关闭',
  extractiveTitle: '离线模型。',
  extractiveBody: '未配置大模型接口，回答是从对话、文档和搜索结果中摘取的句子（抽取式），并非生成的文字。设置 MIXCHAT_LLM_BASE_URL、MIXCHAT_LLM_API_KEY 和 MIXCHAT_LLM_MODEL 后重启即可使用生成式模型。',
  mode: '模式',
  modeMix: '融合：三路合一',
  modeLLM: '仅大模型',
  modeKB: '知识库',
  modeSearch: '搜索',
  unavailable: '此服务器暂不支持',
  knowledgeBase: '知识库',
  searchEngine: '搜索引擎',
  model: '模型',
  question: '你的问题',
  askPlaceholder: '向专家提问…',
  send: '发送',
  stop: '停止',
  composerHint: 'Enter 发送 · Shift+Enter 换行 · Esc 停止',
  newKBName: '新建知识库',
  kbNamePlaceholder: '名称，例如 hr-policies',
  create: '创建',
  kbPick: '选择一个知识库，或新建一个。',
  deleteKB: '删除知识库',
  uploadFiles: '上传文件',
  dropHere: '把文件拖到这里，或',
  chooseFiles: '选择文件',
  fileTypes: 'txt、md、html、pdf、docx、csv、json —— 可一次多个',
  files: '文件',
  noFiles: '还没有文件。',
  tryQuery: '试试检索',
  query: '查询',
  tryPlaceholder: '例如：文档里能回答的一个问题',
  searchBtn: '检索',
  feedbackReason: '原因（可选）',
  cancel: '取消',
  sendFeedback: '提交反馈',
  delete: '删除',
  rename: '重命名',
  save: '保存',
  untitled: '未命名',
  noConversations: '还没有对话。',
  noMatches: '没有匹配的对话。',
  welcomeTitle: '向专家提问',
  welcomeBody: '融合模式下，每个问题都会从三方面回答——带对话记忆的大模型、你的知识库、以及搜索——再融合成一个带引用的答案。其他模式只用其中一种。',
  examples: '试试：',
  you: '你',
  assistant: '专家',
  thinking: '思考中…',
  loading: '加载中…',
  copy: '复制',
  copied: '已复制',
  regenerate: '重新生成',
  good: '回答得好',
  bad: '回答得不好',
  feedbackGood: '这个回答好在哪里？',
  feedbackBad: '这个回答哪里有问题？',
  feedbackThanks: '感谢反馈',
  feedbackNeedsId: '这条回答没有保存，无法评价。',
  notStored: '这条回答没有保存到对话中：服务器不保存此模式的回答。',
  version: '第 {n} 版，共 {total} 版',
  prevVersion: '上一版',
  nextVersion: '下一版',
  sources: '出处',
  howMade: '答案是怎样得出的',
  standalone: '理解后的问题',
  answererLLM: '大模型（带记忆）',
  answererKB: '知识库',
  answererSearch: '网络搜索',
  answererLocalSearch: '本地文件搜索',
  localFiles: '本地文件',
  stateWaiting: '等待中',
  stateStarted: '进行中…',
  stateDone: '完成',
  stateFailed: '失败',
  stateEmpty: '未找到',
  stateSkipped: '未启用',
  noteFailed: '这一路回答失败：{msg}',
  noteEmpty: '没有找到相关内容，答案不依据这一来源。',
  timedOut: '超时。',
  condenseFailed: '追问未能改写成独立问题，已按原问题检索',
  fusionFailed: '多个回答未能融合，显示的是其中最好的一个',
  stopped: '已停止。已显示的部分保存在对话中。',
  interrupted: '这条回答被中断了。',
  errorTitle: '回答失败',
  upstreamError: '模型服务返回错误（HTTP {status}）。',
  serverError: '服务器返回错误（HTTP {status}）。',
  unreachable: '无法连接 mixchat 服务器，它在运行吗？正在重试…',
  networkError: '与服务器的连接中断了。',
  extractiveBadge: '抽取式',
  usage: '{p} + {c} 个 token',
  noKB: '还没有知识库',
  noKBSelected: '未选择',
  kbCount: '已选 {n} 个',
  manageKB: '管理知识库…',
  needKB: '这个模式需要选择知识库（可在“知识库”中新建）。',
  emptyKBs: '还没有知识库：请在上方新建。',
  confirmDeleteConv: '删除对话“{name}”及其全部消息？',
  confirmDeleteKB: '删除知识库“{name}”及其全部文件？',
  confirmDeleteFile: '从知识库中删除“{name}”？',
  uploading: '正在上传 {n} 个文件… {pct}%',
  processing: '正在读取并索引 {n} 个文件…',
  uploadDone: '完成：成功 {ok} 个，失败 {failed} 个。',
  uploadFailed: '上传失败：{msg}',
  fileOK: '已添加',
  fileUnchanged: '内容未变，保持原样',
  score: '得分',
  relevance: '相关度',
  distance: '距离',
  relevanceHelp: '文本与问题的匹配程度，0 到 1，越高越好。',
  distanceHelp: 'Chatchat 式距离，0 到 2，越小越接近。',
  noteEmptyKB: '知识库中没有找到相关内容：这个回答不以知识库为依据。',
  noChunks: '没有达到阈值的片段。',
  chunkFrom: '来自 {file}',
  kbUnavailable: '此服务器暂不支持知识库。',
  conversationGone: '这个对话已不存在。',
  answerComplete: '回答完成。',
  deleted: '已删除。',
  created: '已创建。',
  ms: '{n} 毫秒',
  s: '{n} 秒',
  today: '今天',
};

const dicts = { en, zh };

function browserLang() {
  const langs = navigator.languages && navigator.languages.length ? navigator.languages : [navigator.language || 'en'];
  for (const l of langs) {
    const s = String(l).toLowerCase();
    if (s.startsWith('zh')) return 'zh';
    if (s.startsWith('en')) return 'en';
  }
  return 'en';
}

function stored() {
  try { return localStorage.getItem(KEY); } catch { return null; }
}

let lang = dicts[stored()] ? stored() : browserLang();

export function getLang() { return lang; }

export function setLang(l) {
  if (!dicts[l]) return;
  lang = l;
  try { localStorage.setItem(KEY, l); } catch { /* private mode: keep it for this page */ }
}

// t returns the string for key in the current language with {name}
// placeholders filled from vars.
export function t(key, vars) {
  let s = dicts[lang][key] ?? en[key] ?? key;
  if (vars) s = s.replace(/\{(\w+)\}/g, (m, k) => (k in vars ? String(vars[k]) : m));
  return s;
}

// translate fills the static texts of root: data-i18n sets textContent,
// data-i18n-placeholder / -aria-label / -title set those attributes.
export function translate(root = document) {
  document.documentElement.lang = lang === 'zh' ? 'zh-CN' : 'en';
  for (const el of root.querySelectorAll('[data-i18n]')) el.textContent = t(el.dataset.i18n);
  for (const el of root.querySelectorAll('[data-i18n-placeholder]')) el.placeholder = t(el.dataset.i18nPlaceholder);
  for (const el of root.querySelectorAll('[data-i18n-aria-label]')) el.setAttribute('aria-label', t(el.dataset.i18nAriaLabel));
  for (const el of root.querySelectorAll('[data-i18n-title]')) el.title = t(el.dataset.i18nTitle);
}

// duration formats milliseconds for people.
export function duration(ms) {
  if (ms == null || Number.isNaN(ms)) return '';
  if (ms < 1) return `<${t('ms', { n: 1 })}`;
  return ms < 1000 ? t('ms', { n: Math.round(ms) }) : t('s', { n: (ms / 1000).toFixed(1) });
}

// when formats a Unix-millisecond time: the time today, the date otherwise.
export function when(msec) {
  if (!msec) return '';
  const d = new Date(msec);
  const now = new Date();
  const loc = lang === 'zh' ? 'zh-CN' : 'en';
  if (d.toDateString() === now.toDateString()) return d.toLocaleTimeString(loc, { hour: '2-digit', minute: '2-digit' });
  return d.toLocaleDateString(loc, { month: 'short', day: 'numeric', year: d.getFullYear() === now.getFullYear() ? undefined : 'numeric' });
}
