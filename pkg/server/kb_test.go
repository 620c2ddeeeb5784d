package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mixchat/mixchat/internal/shareddata"
	"github.com/mixchat/mixchat/pkg/chat"
	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/mix"
	"github.com/mixchat/mixchat/pkg/rag"
)

// kbTestServer is a server with a knowledge-base service over a temp dir,
// the offline embedder and the offline model.
type kbTestServer struct {
	url string
	kb  *kb.Service
}

func newKBTestServer(t *testing.T, edit func(*kb.Config)) *kbTestServer {
	t.Helper()
	return newKBTestServerWith(t, edit, nil)
}

// newKBTestServerWith is newKBTestServer whose server options server may
// change (Store, Models, Chat and KB are set) before the server is made.
func newKBTestServerWith(t *testing.T, edit func(*kb.Config), server func(*Options)) *kbTestServer {
	t.Helper()
	store := openSQLite(t)
	models, _ := offlineModels()
	cfg := kb.DefaultConfig()
	cfg.Dir = t.TempDir()
	if edit != nil {
		edit(&cfg)
	}
	svc := newHashKB(t, cfg, 512, models)
	opts := Options{Store: store, Models: models, Chat: chat.New(models, chat.Options{}), KB: svc}
	if server != nil {
		server(&opts)
	}
	return &kbTestServer{url: serveTest(t, New(opts)).URL, kb: svc}
}

// do sends a request and decodes a JSON reply into out (when not nil).
func (ts *kbTestServer) do(t *testing.T, method, path, contentType string, body io.Reader, out any) int {
	t.Helper()
	req, _ := http.NewRequest(method, ts.url+path, body)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: reply is not JSON: %q", method, path, raw)
		}
	}
	return resp.StatusCode
}

func (ts *kbTestServer) postJSON(t *testing.T, path string, body any, out any) int {
	t.Helper()
	b, _ := json.Marshal(body)
	return ts.do(t, http.MethodPost, path, "application/json", bytes.NewReader(b), out)
}

// envelope is Chatchat's BaseResponse.
type envelope struct {
	Code int             `json:"code"`
	Msg  string          `json:"msg"`
	Data json.RawMessage `json:"data"`
}

func (e envelope) failed(t *testing.T) map[string]string {
	t.Helper()
	var d struct {
		Failed map[string]string `json:"failed_files"`
	}
	if err := json.Unmarshal(e.Data, &d); err != nil {
		t.Fatalf("data %s: %v", e.Data, err)
	}
	return d.Failed
}

// upload posts files as Chatchat's clients do (requests' data= and files=).
func (ts *kbTestServer) upload(t *testing.T, fields map[string]string, files map[string][]byte) envelope {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for k, v := range fields {
		w.WriteField(k, v)
	}
	for name, data := range files {
		part, _ := w.CreateFormFile("files", name)
		part.Write(data)
	}
	w.Close()
	var env envelope
	if status := ts.do(t, http.MethodPost, "/knowledge_base/upload_docs", w.FormDataContentType(), &b, &env); status != 200 {
		t.Fatalf("upload: HTTP %d %+v", status, env)
	}
	return env
}

// The sample documents of Chatchat's API test, written here.
var chatchatSamples = map[string][]byte{
	"wiki/Home.MD": []byte("# Langchain-Chatchat\n\nLangchain-Chatchat 项目是一个基于 Langchain 与大语言模型的本地知识库问答项目。" +
		"Langchain-Chatchat 项目支持离线部署，支持 txt、md、pdf、docx 等文件格式。\n\n" +
		"## 项目介绍\n\nLangchain-Chatchat 项目的目标是建立一套对中文场景与开源模型支持友好、可离线运行的知识库问答解决方案。\n"),
	"wiki/开发环境部署.MD": []byte("# 开发环境部署\n\n部署 Langchain-Chatchat 项目需要 Python 3.10。Langchain-Chatchat 项目的依赖写在 requirements.txt 中。\n\n" +
		"## 支持的文件格式\n\n本项目支持 txt、md、html、pdf、docx、csv、json 等文件格式。\n"),
	"test_files/test.txt": []byte("Langchain-Chatchat 项目测试文件。\n\n这个 Langchain-Chatchat 项目可以把文档切分、向量化后存入向量库，再根据问题检索。本项目支持的文件格式有 txt、md、pdf 和 docx。\n"),
}

// TestChatchatKBAPI ports the essence of Langchain-Chatchat 0.2's
// tests/api/test_kb_api.py: the same requests, the same assertions on code,
// msg and data, so a client written for Chatchat 0.2 works unchanged.
func TestChatchatKBAPI(t *testing.T) {
	ts := newKBTestServer(t, nil)
	const kbName = "kb_for_api_test"
	const topK = 3 // Chatchat's VECTOR_SEARCH_TOP_K

	var env envelope
	ts.postJSON(t, "/knowledge_base/create_knowledge_base", map[string]any{"knowledge_base_name": " "}, &env)
	if env.Code != 404 || env.Msg != "知识库名称不能为空，请重新填写知识库名称" {
		t.Errorf("empty name: %+v", env)
	}
	ts.postJSON(t, "/knowledge_base/create_knowledge_base", map[string]any{"knowledge_base_name": kbName}, &env)
	if env.Code != 200 || env.Msg != "已新增知识库 "+kbName {
		t.Fatalf("create: %+v", env)
	}
	ts.postJSON(t, "/knowledge_base/create_knowledge_base", map[string]any{"knowledge_base_name": kbName}, &env)
	if env.Code != 404 || env.Msg != "已存在同名知识库 "+kbName {
		t.Errorf("duplicate: %+v", env)
	}
	// The webui sends its own defaults for the store and model.
	ts.postJSON(t, "/knowledge_base/create_knowledge_base", map[string]any{"knowledge_base_name": "samples", "vector_store_type": "faiss", "embed_model": "hash-512"}, &env)
	if env.Code != 200 {
		t.Errorf("create with Chatchat's defaults: %+v", env)
	}

	var list envelope
	ts.do(t, http.MethodGet, "/knowledge_base/list_knowledge_bases", "", nil, &list)
	var names []string
	json.Unmarshal(list.Data, &names)
	if list.Code != 200 || !contains(names, kbName) {
		t.Errorf("list: %+v", list)
	}

	// Upload with override, again without (every file fails), again with
	// custom docs.
	env = ts.upload(t, map[string]string{"knowledge_base_name": kbName, "override": "True"}, chatchatSamples)
	if env.Code != 200 || len(env.failed(t)) != 0 {
		t.Fatalf("upload: %+v", env)
	}
	env = ts.upload(t, map[string]string{"knowledge_base_name": kbName, "override": "False"}, chatchatSamples)
	if env.Code != 200 || len(env.failed(t)) != len(chatchatSamples) {
		t.Errorf("upload without override: %+v", env)
	}
	for name, msg := range env.failed(t) {
		if msg != "文件 "+name+" 已存在。" {
			t.Errorf("message for %s: %q", name, msg)
		}
	}
	docs, _ := json.Marshal(map[string]any{"FAQ.MD": []map[string]any{{"page_content": "custom docs", "metadata": map[string]any{}}}})
	env = ts.upload(t, map[string]string{"knowledge_base_name": kbName, "override": "True", "docs": string(docs)}, chatchatSamples)
	if env.Code != 200 || len(env.failed(t)) != 0 {
		t.Errorf("upload with custom docs: %+v", env)
	}

	var files envelope
	ts.do(t, http.MethodGet, "/knowledge_base/list_files?knowledge_base_name="+kbName, "", nil, &files)
	json.Unmarshal(files.Data, &names)
	for name := range chatchatSamples {
		if !contains(names, name) {
			t.Errorf("list_files lacks %s: %v", name, names)
		}
	}
	if !contains(names, "FAQ.MD") {
		t.Errorf("list_files lacks the custom docs: %v", names)
	}

	var hits []map[string]any
	ts.postJSON(t, "/knowledge_base/search_docs", map[string]any{"knowledge_base_name": kbName, "query": "介绍一下langchain-chatchat项目"}, &hits)
	if len(hits) != topK {
		t.Fatalf("search_docs: want %d docs, got %d: %v", topK, len(hits), hits)
	}
	for _, h := range hits {
		if h["type"] != "Document" || h["page_content"] == "" || h["id"] == "" {
			t.Errorf("DocumentWithVSId shape: %v", h)
		}
		if score := h["score"].(float64); score < 0 || score > 1 {
			t.Errorf("score must be a Chatchat distance within the default threshold 1.0: %v", score)
		}
		if meta := h["metadata"].(map[string]any); meta["source"] == nil {
			t.Errorf("metadata.source missing: %v", h)
		}
	}

	ts.postJSON(t, "/knowledge_base/update_info", map[string]any{"knowledge_base_name": "samples", "kb_info": "你好"}, &env)
	if env.Code != 200 || !strings.Contains(string(env.Data), "你好") {
		t.Errorf("update_info: %+v", env)
	}

	ts.postJSON(t, "/knowledge_base/update_docs", map[string]any{"knowledge_base_name": kbName, "file_names": keys(chatchatSamples)}, &env)
	if env.Code != 200 || len(env.failed(t)) != 0 {
		t.Errorf("update_docs: %+v", env)
	}

	ts.postJSON(t, "/knowledge_base/delete_docs", map[string]any{"knowledge_base_name": kbName, "file_names": keys(chatchatSamples)}, &env)
	if env.Code != 200 || len(env.failed(t)) != 0 {
		t.Errorf("delete_docs: %+v", env)
	}
	ts.postJSON(t, "/knowledge_base/search_docs", map[string]any{"knowledge_base_name": kbName, "query": "介绍一下langchain-chatchat项目"}, &hits)
	for _, h := range hits {
		if src := h["metadata"].(map[string]any)["source"]; src != "FAQ.MD" {
			t.Errorf("a deleted document is still found: %v", h)
		}
	}

	// recreate_vector_store streams one event per original; the Chatchat
	// test parses each chunk as "data: {...}".
	events := readEvents[map[string]any](t, postStream(t, ts.url+"/knowledge_base/recreate_vector_store", `{"knowledge_base_name": "`+kbName+`"}`))
	if len(events) != len(chatchatSamples) {
		t.Errorf("want one event per file, got %v", events)
	}
	for i, e := range events {
		if e["code"] != float64(200) || e["total"] != float64(3) || e["finished"] != float64(i+1) || !strings.HasPrefix(e["msg"].(string), "(") {
			t.Errorf("progress event: %v", e)
		}
	}
	ts.postJSON(t, "/knowledge_base/search_docs", map[string]any{"knowledge_base_name": kbName, "query": "本项目支持哪些文件格式?"}, &hits)
	if len(hits) != topK {
		t.Errorf("search after recreate: want %d docs, got %v", topK, hits)
	}

	// delete_knowledge_base takes the name as a bare JSON string.
	ts.postJSON(t, "/knowledge_base/delete_knowledge_base", kbName, &env)
	if env.Code != 200 || env.Msg != "成功删除知识库 "+kbName {
		t.Errorf("delete: %+v", env)
	}
	ts.do(t, http.MethodGet, "/knowledge_base/list_knowledge_bases", "", nil, &list)
	json.Unmarshal(list.Data, &names)
	if list.Code != 200 || contains(names, kbName) || len(names) == 0 {
		t.Errorf("list after delete: %v", names)
	}
}

func TestKBErrors(t *testing.T) {
	ts := newKBTestServer(t, nil)
	var env envelope
	tests := []struct {
		path string
		body any
		code int
		msg  string
	}{
		{"/knowledge_base/create_knowledge_base", map[string]any{"knowledge_base_name": "../x"}, 403, "Don't attack me"},
		{"/knowledge_base/delete_knowledge_base", "../../etc", 403, "Don't attack me"},
		{"/knowledge_base/delete_knowledge_base", map[string]any{"knowledge_base_name": "nope"}, 404, "未找到知识库 nope"},
		{"/knowledge_base/update_info", map[string]any{"knowledge_base_name": "nope", "kb_info": "x"}, 404, "未找到知识库 nope"},
		{"/knowledge_base/delete_docs", map[string]any{"knowledge_base_name": "nope", "file_names": []string{"a"}}, 404, "未找到知识库 nope"},
		{"/knowledge_base/update_docs", map[string]any{"knowledge_base_name": "a/b", "file_names": []string{"a"}}, 403, "Don't attack me"},
		{"/knowledge_base/create_knowledge_base", map[string]any{"knowledge_base_name": "x", "vector_store_type": "milvus"}, 500, "创建知识库出错： "},
		{"/knowledge_base/create_knowledge_base", map[string]any{"knowledge_base_name": "x", "vector_store_type": "milvus"}, 500, "milvus"},
		{"/knowledge_base/create_knowledge_base", map[string]any{"knowledge_base_name": "x", "embed_model": "bge-m3"}, 500, "bge-m3"},
	}
	for _, tt := range tests {
		env = envelope{}
		if status := ts.postJSON(t, tt.path, tt.body, &env); status != 200 || env.Code != tt.code || !strings.Contains(env.Msg, tt.msg) {
			t.Errorf("%s %v: HTTP %d %+v, want code %d %q", tt.path, tt.body, status, env, tt.code, tt.msg)
		}
	}
	ts.do(t, http.MethodGet, "/knowledge_base/list_files?knowledge_base_name=nope", "", nil, &env)
	if env.Code != 404 {
		t.Errorf("list_files of an unknown KB: %+v", env)
	}
	// search_docs answers a bare list, empty for an unknown KB (Chatchat's
	// get_service_by_name returning None).
	for _, name := range []string{"nope", "../x"} {
		var hits []map[string]any
		if status := ts.postJSON(t, "/knowledge_base/search_docs", map[string]any{"knowledge_base_name": name, "query": "q"}, &hits); status != 200 || hits == nil || len(hits) != 0 {
			t.Errorf("search_docs in unknown KB %q: HTTP %d %v, want []", name, status, hits)
		}
	}
	// Malformed requests get HTTP errors, as FastAPI's validation does.
	var herr map[string]any
	if status := ts.postJSON(t, "/knowledge_base/search_docs", map[string]any{"knowledge_base_name": "x", "query": "q", "score_threshold": 5}, &herr); status != 400 {
		t.Errorf("score_threshold 5: HTTP %d %v", status, herr)
	}
	if status := ts.postJSON(t, "/chat/knowledge_base_chat", map[string]any{"knowledge_base_name": "x", "query": ""}, &herr); status != 400 {
		t.Errorf("empty query: HTTP %d", status)
	}
}

// TestKBChatStatus: knowledge_base_chat, a chat endpoint, answers a
// knowledge base it cannot use with an HTTP status, not Chatchat's 200
// with a code; and a misspelled field is named as unknown.
func TestKBChatStatus(t *testing.T) {
	ts := newKBTestServer(t, nil)
	var env envelope
	ts.postJSON(t, "/knowledge_base/create_knowledge_base", map[string]any{"knowledge_base_name": "notes"}, &env)
	tests := []struct {
		name   string
		body   any
		status int
		msg    string
	}{
		{"unknown", map[string]any{"query": "q", "knowledge_base_name": "nope"}, 404, `no knowledge base named "nope"`},
		{"unknown among several", map[string]any{"query": "q", "knowledge_base_names": []string{"notes", "nope"}}, 404, `"nope"`},
		{"missing", map[string]any{"query": "q"}, 400, "knowledge_base_name is required"},
		{"empty", map[string]any{"query": "q", "knowledge_base_name": " "}, 400, "knowledge_base_name is required"},
		{"escaping", map[string]any{"query": "q", "knowledge_base_name": "../x"}, 403, ""},
		{"misspelled query", map[string]any{"qeury": "q", "knowledge_base_name": "notes"}, 400, `unknown field "qeury"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body struct {
				Code int    `json:"code"`
				Msg  string `json:"msg"`
			}
			status := ts.postJSON(t, "/chat/knowledge_base_chat", tt.body, &body)
			if status != tt.status || !strings.Contains(body.Msg, tt.msg) {
				t.Errorf("HTTP %d %+v, want HTTP %d with %q", status, body, tt.status, tt.msg)
			}
		})
	}
}

// TestUnknownFieldNamed: a body refused as malformed names the field the
// endpoint does not know; one that is valid goes through with it.
func TestUnknownFieldNamed(t *testing.T) {
	ts := newKBTestServer(t, nil)
	for _, path := range []string{"/chat/chat", "/chat/knowledge_base_chat"} {
		var body struct {
			Msg string `json:"msg"`
		}
		status := ts.postJSON(t, path, map[string]any{"qeury": "hello", "knowledge_base_name": "x"}, &body)
		if status != 400 || !strings.Contains(body.Msg, "unknown field") || !strings.Contains(body.Msg, `"qeury"`) {
			t.Errorf("%s with qeury: HTTP %d %q, want 400 naming the unknown field", path, status, body.Msg)
		}
	}
	var out map[string]any
	if status := ts.postJSON(t, "/chat/chat", map[string]any{"query": "hello", "stream": false, "extra_field": 1}, &out); status != 200 {
		t.Errorf("a valid body with an extra field: HTTP %d %v, want 200", status, out)
	}
}

func TestKBUploadFailuresAndDownload(t *testing.T) {
	ts := newKBTestServer(t, func(c *kb.Config) { c.MaxUploadBytes = 1 << 20 })
	var env envelope
	ts.postJSON(t, "/knowledge_base/create_knowledge_base", map[string]any{"knowledge_base_name": "zy"}, &env)
	env = ts.upload(t, map[string]string{"knowledge_base_name": "zy", "chunk_size": "120", "chunk_overlap": "20"}, map[string][]byte{
		"qian.txt":   []byte("乾卦\n\n乾，元亨，利贞。初九：潜龙勿用。"),
		"bad.xyz":    []byte("nope"),
		"broken.pdf": []byte("%PDF-1.4 broken"),
	})
	failed := env.failed(t)
	if len(failed) != 2 || !strings.Contains(failed["bad.xyz"], "unsupported file type") || !strings.Contains(failed["broken.pdf"], "corrupt") {
		t.Errorf("one bad file never aborts the others, each gets its reason: %v", failed)
	}
	files, _ := ts.kb.Files(context.Background(), "zy")
	if len(files) != 1 || files[0].Name != "qian.txt" || files[0].ChunkSize != 120 {
		t.Errorf("files: %+v", files)
	}

	resp, err := http.Get(ts.url + "/knowledge_base/download_doc?" + url.Values{"knowledge_base_name": {"zy"}, "file_name": {"qian.txt"}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "潜龙勿用") || !strings.Contains(resp.Header.Get("Content-Disposition"), "attachment") {
		t.Errorf("download: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	ts.do(t, http.MethodGet, "/knowledge_base/download_doc?knowledge_base_name=zy&file_name=../kb.db", "", nil, &env)
	if env.Code != 403 && env.Code != 404 {
		t.Errorf("path traversal in file_name must be refused: %+v", env)
	}
	ts.do(t, http.MethodGet, "/knowledge_base/download_doc?knowledge_base_name=zy&file_name=none.txt", "", nil, &env)
	if env.Code != 500 || env.Msg != "none.txt 读取文件失败" {
		t.Errorf("missing file, as Chatchat answers: %+v", env)
	}

	// Without override a changed file replaces the old one (Chatchat
	// overwrites a file whose size changed); the same file again is refused.
	changed := map[string][]byte{"qian.txt": []byte("乾卦\n\n乾，元亨，利贞。九五：飞龙在天，利见大人。")}
	env = ts.upload(t, map[string]string{"knowledge_base_name": "zy", "override": "false"}, changed)
	if env.Code != 200 || len(env.failed(t)) != 0 {
		t.Errorf("changed file without override: %+v", env)
	}
	var hits []map[string]any
	ts.postJSON(t, "/knowledge_base/search_docs", map[string]any{"knowledge_base_name": "zy", "query": "飞龙在天", "score_threshold": 2}, &hits)
	if len(hits) == 0 || !strings.Contains(hits[0]["page_content"].(string), "飞龙在天") {
		t.Errorf("the changed file's chunks should be found: %v", hits)
	}
	env = ts.upload(t, map[string]string{"knowledge_base_name": "zy", "override": "false"}, changed)
	// Nothing stored: the envelope says it failed, and why.
	if msg := env.failed(t)["qian.txt"]; env.Code != 200 || msg != "文件 qian.txt 已存在。" || env.Msg != "文件上传失败：文件 qian.txt 已存在。" {
		t.Errorf("the same file again without override: %+v", env)
	}

	// Uploads above kb.max_upload_bytes are refused whole.
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	w.WriteField("knowledge_base_name", "zy")
	part, _ := w.CreateFormFile("files", "big.txt")
	part.Write(bytes.Repeat([]byte("大"), 1<<20))
	w.Close()
	if status := ts.do(t, http.MethodPost, "/knowledge_base/upload_docs", w.FormDataContentType(), &b, nil); status != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized upload: HTTP %d", status)
	}
}

func TestKBServiceNotConfigured(t *testing.T) {
	ts := newTestServer(t, nil)
	code, body := ts.get(t, "/knowledge_base/list_knowledge_bases")
	if code != http.StatusServiceUnavailable || !strings.Contains(body["msg"].(string), "not configured") {
		t.Errorf("HTTP %d %v", code, body)
	}
}

// zhouyiDir is ../shared/data/zhouyi, or the test skips.
func zhouyiDir(t *testing.T) string {
	t.Helper()
	return shareddata.Path(t, "zhouyi")
}

// TestZhouyiKBChat is the acceptance of the knowledge-base issue through
// the API: the Zhouyi texts are uploaded, and "乾卦的卦辞是什么？" is answered
// from the chunk holding 乾卦's judgement, cited first, streamed and not.
func TestZhouyiKBChat(t *testing.T) {
	dir := zhouyiDir(t)
	ts := newKBTestServer(t, nil)
	var env envelope
	ts.postJSON(t, "/knowledge_base/create_knowledge_base", map[string]any{"knowledge_base_name": "zhouyi"}, &env)
	files := map[string][]byte{}
	trad, _ := os.ReadFile(filepath.Join(dir, "zhouyi-traditional.txt"))
	files["zhouyi-traditional.txt"] = trad
	ms, _ := filepath.Glob(filepath.Join(dir, "yizhuan-simplified", "*.txt"))
	for _, m := range ms {
		b, _ := os.ReadFile(m)
		files["yizhuan-simplified/"+filepath.Base(m)] = b
	}
	env = ts.upload(t, map[string]string{"knowledge_base_name": "zhouyi"}, files)
	if env.Code != 200 || len(env.failed(t)) != 0 {
		t.Fatalf("upload: %+v", env)
	}

	const q = "乾卦的卦辞是什么？"
	var reply struct {
		Answer  string     `json:"answer"`
		Docs    []string   `json:"docs"`
		Sources []kbSource `json:"sources"`
		Empty   bool       `json:"empty"`
		Reason  string     `json:"reason"`
	}
	if status := ts.postJSON(t, "/chat/knowledge_base_chat", map[string]any{"query": q, "knowledge_base_name": "zhouyi", "stream": false}, &reply); status != 200 {
		t.Fatalf("HTTP %d", status)
	}
	if reply.Empty || len(reply.Docs) == 0 || len(reply.Sources) == 0 {
		t.Fatalf("nothing found: %+v", reply)
	}
	first := reply.Docs[0]
	wantPrefix := "出处 [1] [zhouyi-traditional.txt](" + ts.url + "/knowledge_base/download_doc?"
	if !strings.HasPrefix(first, wantPrefix) || !strings.Contains(first, "乾，元亨，利貞") {
		t.Errorf("the first citation should be the judgement of 乾: %q", first)
	}
	if !strings.Contains(reply.Answer, "乾") {
		t.Errorf("the answer should come from the chunks about 乾: %q", reply.Answer)
	}

	// Streamed: answer events, then one docs event.
	b, _ := json.Marshal(map[string]any{"query": q, "knowledge_base_name": "zhouyi", "stream": true})
	resp, err := http.Post(ts.url+"/chat/knowledge_base_chat", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	events := readEvents[map[string]any](t, resp.Body)
	resp.Body.Close()
	if len(events) < 2 {
		t.Fatalf("events: %v", events)
	}
	var answer strings.Builder
	for _, e := range events[:len(events)-1] {
		a, ok := e["answer"].(string)
		if !ok {
			t.Fatalf("answer events first: %v", e)
		}
		answer.WriteString(a)
	}
	last := events[len(events)-1]
	docs, _ := last["docs"].([]any)
	if len(docs) == 0 || !strings.Contains(docs[0].(string), "乾，元亨，利貞") || answer.String() != reply.Answer {
		t.Errorf("stream: answer %q, last event %v", answer.String(), last)
	}

	// Follow the citation link.
	link := reply.Sources[0].URL
	dl, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(dl.Body)
	dl.Body.Close()
	if !bytes.Equal(got, trad) {
		t.Errorf("the citation link should download the original (%d bytes, got %d)", len(trad), len(got))
	}

	// Nothing relevant: the model answers alone and docs say so.
	ts.postJSON(t, "/chat/knowledge_base_chat", map[string]any{"query": "量子计算机的原理是什么", "knowledge_base_name": "zhouyi"}, &reply)
	if !reply.Empty || len(reply.Docs) != 1 || reply.Docs[0] != noDocsNote {
		t.Errorf("empty retrieval: %+v", reply)
	}
	// ... and says why, naming the threshold the best chunk missed.
	if !strings.Contains(reply.Reason, "threshold") && !strings.Contains(reply.Reason, "no chunk matched") {
		t.Errorf("empty retrieval without a reason: %q", reply.Reason)
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestSearchDocsFollowUp: search_docs with history makes the follow-up
// standalone before searching and says so; without history it keeps
// Chatchat's bare list.
func TestSearchDocsFollowUp(t *testing.T) {
	var condensed []string
	ts := newKBTestServerWith(t, nil, func(o *Options) {
		condenser := mix.CondenseFunc(func(_ context.Context, history []llm.Message, q string) (string, string, error) {
			condensed = append(condensed, q)
			if len(history) == 0 {
				return q, "", nil
			}
			return "坤卦的卦辞是什么？", "用户问过坤卦。", nil
		})
		mixer, err := mix.New(mix.DefaultConfig(), mix.Deps{Models: o.Models, Answerers: map[string]rag.Answerer{rag.KB: o.KB}, Condenser: condenser})
		if err != nil {
			t.Fatal(err)
		}
		o.Mixer = mixer
	})
	var env envelope
	ts.postJSON(t, "/knowledge_base/create_knowledge_base", map[string]any{"knowledge_base_name": "yi"}, &env)
	ts.upload(t, map[string]string{"knowledge_base_name": "yi"}, map[string][]byte{
		"qian.txt": []byte("乾卦的卦辞：乾，元亨，利贞。"),
		"kun.txt":  []byte("坤卦的卦辞：坤，元亨，利牝马之贞。"),
	})

	var got searchDocsCondensed
	status := ts.postJSON(t, "/knowledge_base/search_docs", map[string]any{
		"query": "它的卦辞呢？", "knowledge_base_name": "yi", "top_k": 1,
		"history": []map[string]string{{"role": "user", "content": "坤卦是什么？"}, {"role": "assistant", "content": "坤卦是第二卦。"}},
	}, &got)
	if status != http.StatusOK || !got.Rewritten || got.Standalone != "坤卦的卦辞是什么？" || got.Query != "它的卦辞呢？" {
		t.Fatalf("follow-up: HTTP %d %+v", status, got)
	}
	if len(got.Docs) != 1 || !strings.Contains(got.Docs[0].PageContent, "利牝马之贞") {
		t.Fatalf("docs for the standalone question: %+v; want the 坤 chunk", got.Docs)
	}

	var plain []kbDoc
	if status := ts.postJSON(t, "/knowledge_base/search_docs", map[string]any{"query": "乾卦的卦辞", "knowledge_base_name": "yi", "top_k": 1}, &plain); status != http.StatusOK || len(plain) != 1 || !strings.Contains(plain[0].PageContent, "利贞") {
		t.Fatalf("without history: HTTP %d %+v; want Chatchat's list with the 乾 chunk", status, plain)
	}
	if len(condensed) != 1 {
		t.Errorf("condenser called for %q; want once, for the follow-up only", condensed)
	}
	var bad map[string]any
	if status := ts.postJSON(t, "/knowledge_base/search_docs", map[string]any{"query": "它呢？", "knowledge_base_name": "yi", "history": []map[string]string{{"role": "robot", "content": "x"}}}, &bad); status != http.StatusBadRequest {
		t.Errorf("bad history role: HTTP %d %v; want 400", status, bad)
	}
}
