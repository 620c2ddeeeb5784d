package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/mixchat/mixchat/pkg/kb"
)

// The knowledge-base endpoints are wire-compatible with Langchain-Chatchat
// 0.2 (server/knowledge_base/kb_api.py, kb_doc_api.py and
// server/chat/knowledge_base_chat.py on its 0.2.final branch): the same
// request bodies, and replies in its envelope {code, msg, data} with the
// outcome in code (200, 403, 404, 500) and HTTP status 200, as Chatchat
// answers. Malformed requests (bad JSON, a missing query, out-of-range
// numbers) get mixchat's usual HTTP errors, as FastAPI's validation does.
//
// score_threshold keeps Chatchat's meaning: a distance in [0,2], smaller is
// stricter; it maps to mixchat's relevance as 1 − d²/2 (kb.DistanceToRelevance)
// and search_docs reports each chunk's score as that distance
// (kb.RelevanceToDistance) next to the relevance itself.

// kbResponse is Chatchat's BaseResponse / ListResponse.
type kbResponse struct {
	Code int    `json:"code"`
	Msg  string `json:"msg"`
	Data any    `json:"data"`
}

// kbReply writes a Chatchat envelope with HTTP status 200.
func kbReply(c *gin.Context, code int, msg string, data any) {
	c.JSON(http.StatusOK, kbResponse{Code: code, Msg: msg, Data: data})
}

// kbFail writes err in Chatchat's terms: 403 "Don't attack me" for names
// that could leave the KB folder, 404 for empty names and unknown or
// duplicate KBs, 500 for the rest; kbName fills the messages.
func kbFail(c *gin.Context, kbName string, err error, data any) {
	cl := classify(err)
	logError(c, err, cl)
	setRetryAfter(c, cl)
	code, msg := kbErrorCode(kbName, err)
	kbReply(c, code, msg, data)
}

func kbErrorCode(kbName string, err error) (int, string) {
	// Chatchat's codes and words for its own cases; the rest as classify
	// says.
	switch cl := classify(err); {
	case cl.kind == kindForbidden && errors.Is(err, kb.ErrInvalidName):
		return 403, "Don't attack me"
	case errors.Is(err, kb.ErrEmptyName):
		return 404, "知识库名称不能为空，请重新填写知识库名称"
	case cl.kind == kindNotFound && errors.Is(err, kb.ErrNotFound):
		return 404, "未找到知识库 " + kbName
	case cl.kind == kindConflict && errors.Is(err, kb.ErrExists):
		return 404, "已存在同名知识库 " + kbName
	case cl.kind == kindBadRequest:
		return 400, err.Error()
	default:
		return cl.status, publicMessage(err) // no addresses, data paths or credentials; the log has them
	}
}

// fileErrorMsg says in Chatchat's words why one file failed, or in English
// (en).
func fileErrorMsg(kbName, file string, err error, en bool) string {
	if en {
		switch {
		case errors.Is(err, kb.ErrExists):
			return "The file " + file + " already exists."
		case errors.Is(err, kb.ErrNotFound):
			return "No file " + file
		case errors.Is(err, kb.ErrInvalidName), errors.Is(err, kb.ErrEmptyName):
			return "The file name " + file + " is not valid: " + err.Error()
		}
		return fmt.Sprintf("Could not load the documents of %s/%s: %s", kbName, file, publicMessage(err))
	}
	switch {
	case errors.Is(err, kb.ErrExists):
		return "文件 " + file + " 已存在。"
	case errors.Is(err, kb.ErrNotFound):
		return "未找到文件 " + file
	case errors.Is(err, kb.ErrInvalidName), errors.Is(err, kb.ErrEmptyName):
		return "文件名 " + file + " 不合法：" + err.Error()
	}
	return fmt.Sprintf("从文件 %s/%s 加载文档时出错：%s", kbName, file, publicMessage(err))
}

// failedFiles says why each file failed, in the request's language
// (wantsEnglish).
func failedFiles(c *gin.Context, kbName string, failed map[string]error) map[string]string {
	en := wantsEnglish(c)
	out := make(map[string]string, len(failed))
	for f, err := range failed {
		out[f] = fileErrorMsg(kbName, f, err, en)
	}
	return out
}

// kbNameBody decodes a body that is either a JSON string (FastAPI's lone
// Body parameter, as Chatchat's delete_knowledge_base takes it) or an
// object with knowledge_base_name.
func kbNameBody(c *gin.Context) (string, error) {
	raw, err := io.ReadAll(c.Request.Body)
	if err != nil {
		return "", jsonError(err)
	}
	var name string
	if err := json.Unmarshal(raw, &name); err == nil {
		return name, nil
	}
	var obj struct {
		Name *string `json:"knowledge_base_name"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return "", jsonError(err)
	}
	if obj.Name == nil {
		return "", errBadRequest("send the knowledge base name as a JSON string or as {\"knowledge_base_name\": ...}")
	}
	return *obj.Name, nil
}

func (s *Server) handleListKBs(c *gin.Context) {
	names, err := s.kb.Names(c.Request.Context())
	if err == nil {
		names, err = s.visibleKBs(c.Request.Context(), names)
	}
	if err != nil {
		kbReply(c, 500, publicMessage(err), []string{})
		return
	}
	if c.Query("detail") == "true" {
		infos, err := s.kb.List(c.Request.Context())
		if err != nil {
			kbReply(c, 500, publicMessage(err), []string{})
			return
		}
		visible := map[string]bool{}
		for _, n := range names {
			visible[n] = true
		}
		kept := []kbInfo{}
		for _, in := range infos {
			if visible[in.Name] {
				kept = append(kept, kbInfoOf(in))
			}
		}
		def := s.defaultKBs(names)
		c.JSON(http.StatusOK, listKBsReply{kbResponse{200, "success", kept}, def, s.questions(c.Request.Context(), def), s.kb.Config().EmbedModel, s.kb.Profiles()})
		return
	}
	def := s.defaultKBs(names)
	c.JSON(http.StatusOK, listKBsReply{kbResponse{200, "success", names}, def, s.questions(c.Request.Context(), def), s.kb.Config().EmbedModel, s.kb.Profiles()})
}

// kbInfo is a knowledge base as list_knowledge_bases?detail=true shows it,
// in Chatchat's field names.
type kbInfo struct {
	Name        string    `json:"kb_name"`
	Info        string    `json:"kb_info"`
	VectorStore string    `json:"vs_type"`
	EmbedModel  string    `json:"embed_model"`
	Dim         int       `json:"dim"`
	Files       int       `json:"file_count"`
	Chunks      int       `json:"docs_count"`
	CreatedAt   time.Time `json:"create_time"`
	// Profile names the profile the documents are read with, "" for
	// none (mixchat's; docs/structure.md).
	Profile string `json:"profile"`
	// Indexing is true while the embedded index links uploaded vectors
	// into its graph in the background, PendingVectors those it has yet
	// to link; they are searched exactly meanwhile (mixchat's).
	Indexing       bool `json:"indexing"`
	PendingVectors int  `json:"pending_vectors"`
}

func kbInfoOf(in kb.Info) kbInfo {
	return kbInfo{Name: in.Name, Info: in.Info, VectorStore: in.VectorStore, EmbedModel: in.EmbedModel,
		Dim: in.Dim, Files: in.Files, Chunks: in.Chunks, CreatedAt: in.CreatedAt, Profile: in.Profile,
		Indexing: in.Indexing, PendingVectors: in.Pending}
}

// kbFileInfo is a document as list_files?detail=true shows it, in
// Chatchat's field names.
type kbFileInfo struct {
	Name           string    `json:"file_name"`
	Hash           string    `json:"hash"`
	Size           int64     `json:"file_size"`
	ModTime        time.Time `json:"file_mtime"`
	Chunks         int       `json:"docs_count"`
	CustomDocs     bool      `json:"custom_docs"`
	ChunkSize      int       `json:"chunk_size"`
	ChunkOverlap   int       `json:"chunk_overlap"`
	ZhTitleEnhance bool      `json:"zh_title_enhance"`
	CreatedAt      time.Time `json:"create_time"`
	UpdatedAt      time.Time `json:"update_time"`
}

func kbFileInfoOf(f kb.FileInfo) kbFileInfo {
	return kbFileInfo{Name: f.Name, Hash: f.Hash, Size: f.Size, ModTime: f.ModTime, Chunks: f.Chunks,
		CustomDocs: f.CustomDocs, ChunkSize: f.ChunkSize, ChunkOverlap: f.ChunkOverlap,
		ZhTitleEnhance: f.ZhTitleEnhance, CreatedAt: f.CreatedAt, UpdatedAt: f.UpdatedAt}
}

// listKBsReply is Chatchat's ListResponse plus mixchat's "default": the
// knowledge bases mix_chat and /v1 mixchat-kb search when a request names
// none (kb.default_knowledge_bases, or the demo's), among those listed.
type listKBsReply struct {
	kbResponse
	Default []string `json:"default"`
	// Questions are suggested to a user of the default knowledge bases
	// (Options.KBQuestions); none without a default.
	Questions []string `json:"questions"`
	// EmbedModel is the embedding model this server embeds with now; a
	// knowledge base indexed with another (its embed_model differs) is
	// searched again once it is rebuilt with this one
	// (recreate_vector_store with this embed_model).
	EmbedModel string `json:"embed_model,omitempty"`
	// Profiles are the structure profiles a knowledge base may name
	// (create_knowledge_base, update_info).
	Profiles []string `json:"profiles"`
}

// questions returns the suggested questions of the default knowledge
// bases def: the examples of the profiles they name.
func (s *Server) questions(ctx context.Context, def []string) []string {
	out := []string{}
	for _, n := range def {
		info, err := s.kb.Info(ctx, n)
		if err != nil || info.Profile == "" {
			continue
		}
		if p, ok := s.kb.Profile(info.Profile); ok {
			out = append(out, p.Examples...)
		}
	}
	return out
}

func (s *Server) defaultKBs(listed []string) []string {
	out := []string{}
	for _, n := range s.kb.Config().DefaultKnowledgeBases {
		if slices.Contains(listed, n) {
			out = append(out, n)
		}
	}
	return out
}

type createKBRequest struct {
	Name            *string `json:"knowledge_base_name"`
	VectorStoreType string  `json:"vector_store_type"`
	EmbedModel      string  `json:"embed_model"`
	Info            string  `json:"kb_info"`
	// Profile names the profile the documents are read with (mixchat's;
	// "" for none).
	Profile string `json:"profile"`
}

func (r *createKBRequest) validate() error {
	if r.Name == nil {
		return errBadRequest("knowledge_base_name is required")
	}
	return nil
}

// checkProfile refuses a profile the server does not know, naming the
// field and the profiles it knows.
func (s *Server) checkProfile(name string) error {
	if name == "" {
		return nil
	}
	if _, ok := s.kb.Profile(name); ok {
		return nil
	}
	known := s.kb.Profiles()
	if len(known) == 0 {
		return errBadRequest("profile %q is not known: this server has no profiles (kb.profiles_dir)", name)
	}
	return errBadRequest("profile %q is not known: use one of %s, or \"\" for none", name, strings.Join(known, ", "))
}

func (s *Server) handleCreateKB(c *gin.Context, req *createKBRequest) {
	name := *req.Name
	if err := s.checkProfile(req.Profile); err != nil {
		writeError(c, err)
		return
	}
	if _, err := s.kb.Create(c.Request.Context(), name, kb.CreateOptions{VectorStore: req.VectorStoreType, EmbedModel: req.EmbedModel, Info: req.Info, Profile: req.Profile}); err != nil {
		code, msg := kbErrorCode(name, err)
		if code != 403 && code != 404 && !errors.Is(err, kb.ErrInvalidName) {
			// Chatchat's code and words when the store cannot create it
			// (an unavailable vector store or embedding model here).
			code, msg = 500, "创建知识库出错： "+publicMessage(err)
		}
		kbReply(c, code, msg, nil)
		return
	}
	kbReply(c, 200, "已新增知识库 "+name, nil)
}

func (s *Server) handleDeleteKB(c *gin.Context) {
	name, err := kbNameBody(c)
	if err != nil {
		writeError(c, err)
		return
	}
	if u, err := url.QueryUnescape(name); err == nil {
		name = u
	}
	if err := s.kb.Delete(c.Request.Context(), name); err != nil {
		code, msg := kbErrorCode(name, err)
		if code == 500 {
			msg = "删除知识库时出现意外： " + msg
		}
		kbReply(c, code, msg, nil)
		return
	}
	kbReply(c, 200, "成功删除知识库 "+name, nil)
}

type updateInfoRequest struct {
	Name   string  `json:"knowledge_base_name"`
	KBInfo *string `json:"kb_info"`
	// Profile, when sent, names the profile the documents are read with
	// ("" for none); the structure is read again with it (mixchat's).
	Profile *string `json:"profile"`
}

func (r *updateInfoRequest) validate() error {
	if r.KBInfo == nil && r.Profile == nil {
		return errBadRequest("kb_info is required (or profile, to change only the profile)")
	}
	return nil
}

func (s *Server) handleUpdateKBInfo(c *gin.Context, req *updateInfoRequest) {
	ctx := c.Request.Context()
	if req.Profile != nil {
		if err := s.checkProfile(*req.Profile); err != nil {
			writeError(c, err)
			return
		}
	}
	data := gin.H{}
	if req.KBInfo != nil {
		if err := s.kb.SetInfo(ctx, req.Name, *req.KBInfo); err != nil {
			kbFail(c, req.Name, err, nil)
			return
		}
		data["kb_info"] = *req.KBInfo
	}
	if req.Profile != nil {
		if err := s.kb.SetProfile(ctx, req.Name, *req.Profile); err != nil {
			kbFail(c, req.Name, err, nil)
			return
		}
		data["profile"] = *req.Profile
	}
	kbReply(c, 200, "知识库介绍修改完成", data)
}

func (s *Server) handleListKBFiles(c *gin.Context) {
	name := c.Query("knowledge_base_name")
	files, err := s.kb.Files(c.Request.Context(), name)
	if err != nil {
		kbFail(c, name, err, []string{})
		return
	}
	if c.Query("detail") == "true" {
		out := make([]kbFileInfo, len(files))
		for i, f := range files {
			out[i] = kbFileInfoOf(f)
		}
		kbReply(c, 200, "success", out)
		return
	}
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = f.Name
	}
	kbReply(c, 200, "success", names)
}

// searchDocsRequest is Chatchat's search_docs body plus mixchat's
// knowledge_base_names (several KBs) and min_relevance (a threshold on the
// normalised relevance instead of score_threshold).
type searchDocsRequest struct {
	Query string `json:"query"`
	kbRetrieval
	FileName string         `json:"file_name"`
	Metadata map[string]any `json:"metadata"`
	// History or ConversationID make a follow-up question standalone
	// first (the mix pipeline's condensing); the reply is then an object
	// with the standalone question and the docs found for it instead of
	// Chatchat's bare list.
	History        []historyItem `json:"history"`
	ConversationID string        `json:"conversation_id"`
	// history_len, memory and window_k: what is recalled of the
	// conversation for the rewrite, as in /chat/chat.
	memoryFields
}

// kbDoc is Chatchat's DocumentWithVSId, plus mixchat's relevance and
// knowledge base.
type kbDoc struct {
	PageContent   string         `json:"page_content"`
	Metadata      map[string]any `json:"metadata"`
	Type          string         `json:"type"`
	ID            string         `json:"id"`
	Score         float64        `json:"score"`               // Chatchat distance, smaller is closer
	Relevance     float64        `json:"relevance,omitempty"` // mixchat relevance in [0,1]
	KnowledgeBase string         `json:"knowledge_base,omitempty"`
	// Match is "part" for the part of a document the query addresses by
	// number or name (the first doc), "absent" for the statement that
	// it does not exist (the only doc), absent for similarity.
	Match string `json:"match,omitempty"`
}

// listedScore is the score Chatchat gives documents listed without a query.
const listedScore = 3.0

func toKBDoc(c kb.Chunk) kbDoc {
	meta := c.Metadata
	if meta == nil {
		meta = map[string]any{}
	}
	if _, ok := meta["source"]; !ok {
		meta["source"] = c.File
	}
	return kbDoc{PageContent: c.Text, Metadata: meta, Type: "Document", ID: c.ID, Score: listedScore}
}

// threshold resolves a request's threshold to a relevance: min_relevance
// as is, else score_threshold as a Chatchat distance, else the configured
// default.
func (s *Server) threshold(scoreThreshold, minRelevance *float64) (float64, error) {
	switch {
	case minRelevance != nil:
		if *minRelevance < 0 || *minRelevance > 1 || math.IsNaN(*minRelevance) {
			return 0, errBadRequest("min_relevance must be between 0 and 1, got %v", *minRelevance)
		}
		return *minRelevance, nil
	case scoreThreshold != nil:
		if *scoreThreshold < 0 || *scoreThreshold > 2 || math.IsNaN(*scoreThreshold) {
			return 0, errBadRequest("score_threshold must be a distance between 0 and 2 (smaller is stricter), got %v", *scoreThreshold)
		}
		return kb.DistanceToRelevance(*scoreThreshold), nil
	}
	return s.kb.DefaultMinRelevance(), nil
}

func topK(k *int) (int, error) {
	if k == nil {
		return 0, nil
	}
	if *k < 1 || *k > 1000 {
		return 0, errBadRequest("top_k must be between 1 and 1000, got %d", *k)
	}
	return *k, nil
}

func kbNames(one string, many []string) []string {
	if len(many) > 0 {
		return many
	}
	return []string{one}
}

func (s *Server) handleSearchDocs(c *gin.Context, req *searchDocsRequest) {
	names, k, minRel, err := req.params(s)
	if err != nil {
		writeError(c, err)
		return
	}
	ctx := c.Request.Context()
	docs := []kbDoc{}
	// A knowledge base the caller may not read takes the path of a missing
	// one below, so both get the same answer.
	hidden := s.readableKBs(ctx, names...)
	if hidden != nil && !noSuchKB(hidden) {
		kbFail(c, strings.Join(names, ", "), hidden, docs)
		return
	}
	if strings.TrimSpace(req.Query) == "" {
		// Chatchat lists the documents of a file or with metadata instead.
		if req.FileName == "" && len(req.Metadata) == 0 {
			c.JSON(http.StatusOK, docs)
			return
		}
		for _, name := range names {
			err := s.readableKBs(ctx, name)
			var chunks []kb.Chunk
			if err == nil {
				chunks, err = s.kb.ListChunks(ctx, name, req.FileName, req.Metadata)
			}
			if err != nil {
				if noSuchKB(err) && len(req.KnowledgeBases) == 0 {
					break // Chatchat answers [] for an unknown KB
				}
				kbFail(c, name, err, docs)
				return
			}
			for _, ch := range chunks {
				d := toKBDoc(ch)
				d.KnowledgeBase = name
				docs = append(docs, d)
			}
		}
		c.JSON(http.StatusOK, docs)
		return
	}
	choice, err := req.choice(s)
	if err != nil {
		writeError(c, err)
		return
	}
	cq, err := s.condenseSearch(ctx, req.Query, req.ConversationID, req.History, choice)
	if err != nil {
		writeError(c, err)
		return
	}
	query := req.Query
	if cq != nil {
		query = cq.Standalone
	}
	reply := func() {
		if cq != nil {
			cq.Docs = docs
			c.JSON(http.StatusOK, cq)
			return
		}
		c.JSON(http.StatusOK, docs)
	}
	var results []kb.Result
	err = hidden
	if err == nil {
		results, err = s.kb.Search(ctx, kb.SearchRequest{
			Query: query, KnowledgeBases: names, TopK: k, MinRelevance: minRel,
			File: req.FileName, Metadata: req.Metadata,
		})
	}
	if err != nil {
		if noSuchKB(err) && len(req.KnowledgeBases) == 0 {
			// Chatchat's search_docs answers [] for an unknown KB; with
			// mixchat's knowledge_base_names the error says which.
			reply()
			return
		}
		kbFail(c, strings.Join(names, ", "), err, docs)
		return
	}
	for _, r := range results {
		d := toKBDoc(r.Chunk)
		d.Score = kb.RelevanceToDistance(r.Relevance)
		d.Relevance = r.Relevance
		d.KnowledgeBase = r.KnowledgeBase
		d.Match = r.Match
		if d.ID == "" || r.Match != "" {
			d.ID = r.ID
		}
		docs = append(docs, d)
	}
	reply()
}

type recreateRequest struct {
	Name         string `json:"knowledge_base_name"`
	AllowEmptyKB *bool  `json:"allow_empty_kb"`
	VSType       string `json:"vs_type"`
	EmbedModel   string `json:"embed_model"`
	splitFields
	NotRefresh bool `json:"not_refresh_vs_cache"`
}

// recreateEvent is one progress event of recreate_vector_store, as
// Chatchat streams them.
type recreateEvent struct {
	Code     int    `json:"code"`
	Msg      string `json:"msg"`
	Total    int    `json:"total,omitempty"`
	Finished int    `json:"finished,omitempty"`
	Doc      string `json:"doc,omitempty"`
}

// handleRecreateVectorStore rebuilds a KB from its originals, streaming
// one event per file: {"code":200,"msg":"(i / n): file","total":n,
// "finished":i,"doc":file}, or code 500 with the reason for a file that
// was skipped.
func (s *Server) handleRecreateVectorStore(c *gin.Context, req *recreateRequest) {
	if err := kb.ValidName(req.Name); err != nil {
		kbFail(c, req.Name, err, nil)
		return
	}
	allow := req.AllowEmptyKB == nil || *req.AllowEmptyKB
	ctx, done := s.replyContext(c.Request.Context())
	defer done()
	out := s.newSSE(c)
	defer out.close()
	var sendErr error
	send := func(e recreateEvent) {
		if sendErr == nil {
			sendErr = out.Send(e)
		}
	}
	_, err := s.kb.Recreate(ctx, req.Name, kb.RecreateOptions{
		SplitOptions: req.options, AllowEmpty: allow, VectorStore: req.VSType, EmbedModel: req.EmbedModel,
	}, func(p kb.Progress) {
		switch p.Stage {
		case kb.StageDone, kb.StageSkipped:
			send(recreateEvent{Code: 200, Msg: fmt.Sprintf("(%d / %d): %s", p.Index, p.Total, p.File), Total: p.Total, Finished: p.Index, Doc: p.File})
		case kb.StageFailed:
			send(recreateEvent{Code: 500, Msg: fmt.Sprintf("添加文件‘%s’到知识库‘%s’时出错：%s。已跳过。", p.File, req.Name, publicMessage(p.Err))})
		}
	})
	if err != nil && sendErr == nil {
		code, msg := kbErrorCode(req.Name, err)
		if errors.Is(err, kb.ErrNotFound) {
			msg = "未找到知识库 ‘" + req.Name + "’"
		}
		send(recreateEvent{Code: code, Msg: msg})
	}
	if !out.started {
		// No file to add: an empty SSE reply, as Chatchat gives.
		out.start()
	}
}

// noSuchKB reports whether err says the named KB does not exist (unknown,
// empty or unusable name): Chatchat's get_service_by_name returning None.
func noSuchKB(err error) bool {
	return errors.Is(err, kb.ErrNotFound) || errors.Is(err, kb.ErrInvalidName) || errors.Is(err, kb.ErrEmptyName)
}

// checkName returns why a KB name is refused, or kb.ErrNotFound.
func checkName(n string) error {
	if err := kb.ValidName(n); err != nil {
		return err
	}
	return kb.ErrNotFound
}
