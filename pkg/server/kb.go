package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"

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

// kbRoutes registers the knowledge-base endpoints (/knowledge_base/*,
// /chat/knowledge_base_chat).
func (s *Server) kbRoutes(r gin.IRouter) {
	g := r.Group("/knowledge_base")
	g.GET("/list_knowledge_bases", s.kbOnly(s.handleListKBs))
	g.POST("/create_knowledge_base", s.kbOnly(s.handleCreateKB))
	g.POST("/delete_knowledge_base", s.kbOnly(s.handleDeleteKB))
	g.POST("/update_info", s.kbOnly(s.handleUpdateKBInfo))
	g.GET("/list_files", s.kbOnly(s.handleListKBFiles))
	g.POST("/search_docs", s.kbOnly(s.handleSearchDocs))
	g.POST("/upload_docs", s.kbOnly(s.handleUploadDocs))
	g.POST("/delete_docs", s.kbOnly(s.handleDeleteDocs))
	g.POST("/update_docs", s.kbOnly(s.handleUpdateDocs))
	g.GET("/download_doc", s.kbOnly(s.handleDownloadDoc))
	g.POST("/recreate_vector_store", s.kbOnly(s.handleRecreateVectorStore))
	r.POST("/chat/knowledge_base_chat", s.kbOnly(s.handleKBChat))
}

// kbOnly answers 503 when no knowledge-base service is configured.
func (s *Server) kbOnly(h gin.HandlerFunc) gin.HandlerFunc {
	return func(c *gin.Context) {
		if s.kb == nil {
			writeError(c, errUnavailable("knowledge bases are not configured on this server"))
			return
		}
		h(c)
	}
}

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
	case cl.kind == kindInternal:
		return 500, err.Error()
	default:
		return cl.status, err.Error()
	}
}

// fileErrorMsg says in Chatchat's words why one file failed.
func fileErrorMsg(kbName, file string, err error) string {
	switch {
	case errors.Is(err, kb.ErrExists):
		return "文件 " + file + " 已存在。"
	case errors.Is(err, kb.ErrNotFound):
		return "未找到文件 " + file
	case errors.Is(err, kb.ErrInvalidName), errors.Is(err, kb.ErrEmptyName):
		return "文件名 " + file + " 不合法：" + err.Error()
	}
	return fmt.Sprintf("从文件 %s/%s 加载文档时出错：%v", kbName, file, err)
}

func failedFiles(kbName string, failed map[string]error) map[string]string {
	out := make(map[string]string, len(failed))
	for f, err := range failed {
		out[f] = fileErrorMsg(kbName, f, err)
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
	names, err := s.kb.Names()
	if err == nil {
		names, err = s.visibleKBs(c.Request.Context(), names)
	}
	if err != nil {
		kbReply(c, 500, err.Error(), []string{})
		return
	}
	if c.Query("detail") == "true" {
		infos, err := s.kb.List(c.Request.Context())
		if err != nil {
			kbReply(c, 500, err.Error(), []string{})
			return
		}
		visible := map[string]bool{}
		for _, n := range names {
			visible[n] = true
		}
		kept := infos[:0]
		for _, in := range infos {
			if visible[in.Name] {
				kept = append(kept, in)
			}
		}
		c.JSON(http.StatusOK, listKBsReply{kbResponse{200, "success", kept}, s.defaultKBs(names)})
		return
	}
	c.JSON(http.StatusOK, listKBsReply{kbResponse{200, "success", names}, s.defaultKBs(names)})
}

// listKBsReply is Chatchat's ListResponse plus mixchat's "default": the
// knowledge bases mix_chat and /v1 mixchat-kb search when a request names
// none (kb.default_knowledge_bases, or the demo's), among those listed.
type listKBsReply struct {
	kbResponse
	Default []string `json:"default"`
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
}

func (s *Server) handleCreateKB(c *gin.Context) {
	var req createKBRequest
	if err := decodeJSON(c, &req); err != nil {
		writeError(c, err)
		return
	}
	if req.Name == nil {
		writeError(c, errBadRequest("knowledge_base_name is required"))
		return
	}
	name := *req.Name
	if _, err := s.kb.Create(c.Request.Context(), name, kb.CreateOptions{VectorStore: req.VectorStoreType, EmbedModel: req.EmbedModel, Info: req.Info}); err != nil {
		code, msg := kbErrorCode(name, err)
		if code != 403 && code != 404 {
			// Chatchat's code and words when the store cannot create it
			// (an unavailable vector store or embedding model here).
			code, msg = 500, "创建知识库出错： "+err.Error()
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
			msg = "删除知识库时出现意外： " + err.Error()
		}
		kbReply(c, code, msg, nil)
		return
	}
	kbReply(c, 200, "成功删除知识库 "+name, nil)
}

type updateInfoRequest struct {
	Name   string  `json:"knowledge_base_name"`
	KBInfo *string `json:"kb_info"`
}

func (s *Server) handleUpdateKBInfo(c *gin.Context) {
	var req updateInfoRequest
	if err := decodeJSON(c, &req); err != nil {
		writeError(c, err)
		return
	}
	if req.KBInfo == nil {
		writeError(c, errBadRequest("kb_info is required"))
		return
	}
	if err := s.kb.SetInfo(c.Request.Context(), req.Name, *req.KBInfo); err != nil {
		kbFail(c, req.Name, err, nil)
		return
	}
	kbReply(c, 200, "知识库介绍修改完成", gin.H{"kb_info": *req.KBInfo})
}

func (s *Server) handleListKBFiles(c *gin.Context) {
	name := c.Query("knowledge_base_name")
	files, err := s.kb.Files(c.Request.Context(), name)
	if err != nil {
		kbFail(c, name, err, []string{})
		return
	}
	if c.Query("detail") == "true" {
		kbReply(c, 200, "success", files)
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

func (s *Server) handleSearchDocs(c *gin.Context) {
	var req searchDocsRequest
	if err := decodeJSON(c, &req); err != nil {
		writeError(c, err)
		return
	}
	names, k, minRel, err := req.params(s)
	if err != nil {
		writeError(c, err)
		return
	}
	if !s.kbReadable(c, names) {
		return
	}
	ctx := c.Request.Context()
	docs := []kbDoc{}
	if strings.TrimSpace(req.Query) == "" {
		// Chatchat lists the documents of a file or with metadata instead.
		if req.FileName == "" && len(req.Metadata) == 0 {
			c.JSON(http.StatusOK, docs)
			return
		}
		for _, name := range names {
			chunks, err := s.kb.ListChunks(ctx, name, req.FileName, req.Metadata)
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
	cq, err := s.condenseSearch(ctx, req.Query, req.ConversationID, req.History)
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
	results, err := s.kb.Search(ctx, kb.SearchRequest{
		Query: query, KnowledgeBases: names, TopK: k, MinRelevance: minRel,
		File: req.FileName, Metadata: req.Metadata,
	})
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
		docs = append(docs, d)
	}
	reply()
}

// formBool parses a form boolean as FastAPI does (true/false, 1/0, yes/no,
// on/off, any case); empty means def.
func formBool(v string, def bool) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "":
		return def, nil
	case "true", "1", "yes", "on", "t", "y":
		return true, nil
	case "false", "0", "no", "off", "f", "n":
		return false, nil
	}
	return false, fmt.Errorf("not a boolean: %q", v)
}

func formInt(v string) (int, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, nil
	}
	return strconv.Atoi(v)
}

// customDocs parses Chatchat's docs field: a JSON object (or a string
// holding one) mapping file names to lists of {page_content, metadata}.
func customDocs(raw []byte) (map[string][]kb.Document, error) {
	raw = []byte(strings.TrimSpace(string(raw)))
	if len(raw) == 0 || string(raw) == "null" || string(raw) == `""` {
		return nil, nil
	}
	if raw[0] == '"' {
		var inner string
		if err := json.Unmarshal(raw, &inner); err != nil {
			return nil, err
		}
		return customDocs([]byte(inner))
	}
	var docs map[string][]kb.Document
	if err := json.Unmarshal(raw, &docs); err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		return nil, nil
	}
	return docs, nil
}

// splitOptions reads chunk_size, chunk_overlap and zh_title_enhance.
func splitOptions(size, overlap *int, zh *bool) (kb.SplitOptions, error) {
	var o kb.SplitOptions
	if size != nil {
		if *size < 10 || *size > 100000 {
			return o, errBadRequest("chunk_size must be between 10 and 100000, got %d", *size)
		}
		o.ChunkSize = *size
	}
	if overlap != nil {
		if *overlap < 0 {
			return o, errBadRequest("chunk_overlap must not be negative, got %d", *overlap)
		}
		o.ChunkOverlap = *overlap
	}
	o.ZhTitleEnhance = zh
	return o, nil
}

func (s *Server) handleUploadDocs(c *gin.Context) {
	limit := s.kb.Config().MaxUploadBytes
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, limit)
	if err := c.Request.ParseMultipartForm(32 << 20); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(c, &Error{Status: http.StatusRequestEntityTooLarge, Msg: fmt.Sprintf("upload larger than %d bytes (kb.max_upload_bytes)", limit)})
			return
		}
		writeError(c, errBadRequest("send multipart/form-data with files and knowledge_base_name: %v", err))
		return
	}
	form := c.Request.MultipartForm
	defer form.RemoveAll()
	val := func(k string) string {
		if v := form.Value[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	name := val("knowledge_base_name")
	var opts kb.AddOptions
	var err error
	var toVS bool
	var size, overlap int
	var zh *bool
	if opts.Override, err = formBool(val("override"), false); err != nil {
		writeError(c, errBadRequest("override: %v", err))
		return
	}
	if toVS, err = formBool(val("to_vector_store"), true); err != nil {
		writeError(c, errBadRequest("to_vector_store: %v", err))
		return
	}
	opts.SaveOnly = !toVS
	if size, err = formInt(val("chunk_size")); err != nil {
		writeError(c, errBadRequest("chunk_size: %v", err))
		return
	}
	if overlap, err = formInt(val("chunk_overlap")); err != nil {
		writeError(c, errBadRequest("chunk_overlap: %v", err))
		return
	}
	if v := val("zh_title_enhance"); v != "" {
		b, err := formBool(v, false)
		if err != nil {
			writeError(c, errBadRequest("zh_title_enhance: %v", err))
			return
		}
		zh = &b
	}
	var sp, op *int
	if size != 0 {
		sp = &size
	}
	if overlap != 0 {
		op = &overlap
	}
	if opts.SplitOptions, err = splitOptions(sp, op, zh); err != nil {
		writeError(c, err)
		return
	}
	if opts.Docs, err = customDocs([]byte(val("docs"))); err != nil {
		writeError(c, errBadRequest("docs must be a JSON object of file name → [{page_content, metadata}]: %v", err))
		return
	}
	var files []kb.FileData
	failed := map[string]string{}
	for _, fh := range form.File["files"] {
		data, err := readPart(fh)
		if err != nil {
			failed[fh.Filename] = fmt.Sprintf("%s 文件上传失败，报错信息为: %v", fh.Filename, err)
			continue
		}
		files = append(files, kb.FileData{Name: uploadName(fh), Data: data})
	}
	res, err := s.kb.AddFiles(c.Request.Context(), name, files, opts, nil)
	if err != nil {
		kbFail(c, name, err, gin.H{"failed_files": failed})
		return
	}
	for f, msg := range failedFiles(name, res.Failed) {
		failed[f] = msg
	}
	skipped := res.Skipped
	if skipped == nil {
		skipped = []string{}
	}
	kbReply(c, 200, "文件上传与向量化完成", gin.H{"failed_files": failed, "skipped_files": skipped})
}

// uploadName is the document name of an uploaded part: the file name as
// the client sent it, folders included ("wiki/Home.md", as Chatchat keeps
// them; mime/multipart's FileHeader.Filename drops them), with Windows
// separators turned into "/". Names that could leave the KB folder are
// refused by the knowledge base.
func uploadName(fh *multipart.FileHeader) string {
	n := fh.Filename
	if _, params, err := mime.ParseMediaType(fh.Header.Get("Content-Disposition")); err == nil && params["filename"] != "" {
		n = params["filename"]
	}
	return strings.ReplaceAll(n, "\\", "/")
}

func readPart(fh *multipart.FileHeader) ([]byte, error) {
	f, err := fh.Open()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

type deleteDocsRequest struct {
	Name          string   `json:"knowledge_base_name"`
	FileNames     []string `json:"file_names"`
	DeleteContent bool     `json:"delete_content"`
	NotRefresh    bool     `json:"not_refresh_vs_cache"`
}

func (s *Server) handleDeleteDocs(c *gin.Context) {
	var req deleteDocsRequest
	if err := decodeJSON(c, &req); err != nil {
		writeError(c, err)
		return
	}
	failed, err := s.kb.DeleteFiles(c.Request.Context(), req.Name, req.FileNames, req.DeleteContent)
	if err != nil {
		kbFail(c, req.Name, err, gin.H{"failed_files": failedFiles(req.Name, failed)})
		return
	}
	kbReply(c, 200, "文件删除完成", gin.H{"failed_files": failedFiles(req.Name, failed)})
}

type updateDocsRequest struct {
	Name               string          `json:"knowledge_base_name"`
	FileNames          []string        `json:"file_names"`
	ChunkSize          *int            `json:"chunk_size"`
	ChunkOverlap       *int            `json:"chunk_overlap"`
	ZhTitleEnhance     *bool           `json:"zh_title_enhance"`
	OverrideCustomDocs bool            `json:"override_custom_docs"`
	Docs               json.RawMessage `json:"docs"`
	NotRefresh         bool            `json:"not_refresh_vs_cache"`
}

func (s *Server) handleUpdateDocs(c *gin.Context) {
	var req updateDocsRequest
	if err := decodeJSON(c, &req); err != nil {
		writeError(c, err)
		return
	}
	sp, err := splitOptions(req.ChunkSize, req.ChunkOverlap, req.ZhTitleEnhance)
	if err != nil {
		writeError(c, err)
		return
	}
	docs, err := customDocs(req.Docs)
	if err != nil {
		writeError(c, errBadRequest("docs must be a JSON object of file name → [{page_content, metadata}]: %v", err))
		return
	}
	res, err := s.kb.UpdateFiles(c.Request.Context(), req.Name, req.FileNames, kb.UpdateOptions{
		SplitOptions: sp, OverrideCustomDocs: req.OverrideCustomDocs, Docs: docs,
	}, nil)
	if err != nil {
		kbFail(c, req.Name, err, gin.H{"failed_files": failedFiles(req.Name, res.Failed)})
		return
	}
	kbReply(c, 200, "更新文档完成", gin.H{"failed_files": failedFiles(req.Name, res.Failed)})
}

func (s *Server) handleDownloadDoc(c *gin.Context) {
	name := c.Query("knowledge_base_name")
	file := c.Query("file_name")
	preview, _ := formBool(c.Query("preview"), false)
	o, err := s.kb.Original(c.Request.Context(), name, file)
	if err != nil {
		if errors.Is(err, kb.ErrNotFound) {
			exists, xerr := s.kb.Exists(c.Request.Context(), name)
			if xerr != nil {
				err = xerr
			} else if exists {
				// Chatchat's reply for a file that is not in the KB.
				kbReply(c, 500, file+" 读取文件失败", nil)
				return
			}
		}
		kbFail(c, name, err, nil)
		return
	}
	disposition := "attachment"
	if preview {
		disposition = "inline"
	}
	defer o.Close()
	c.Header("Content-Disposition", disposition+"; filename*=UTF-8''"+url.PathEscape(path.Base(file)))
	// From the content folder or, with kb.store postgres, from the
	// database: any replica serves it.
	http.ServeContent(c.Writer, c.Request, path.Base(file), o.ModTime, o)
}

type recreateRequest struct {
	Name           string `json:"knowledge_base_name"`
	AllowEmptyKB   *bool  `json:"allow_empty_kb"`
	VSType         string `json:"vs_type"`
	EmbedModel     string `json:"embed_model"`
	ChunkSize      *int   `json:"chunk_size"`
	ChunkOverlap   *int   `json:"chunk_overlap"`
	ZhTitleEnhance *bool  `json:"zh_title_enhance"`
	NotRefresh     bool   `json:"not_refresh_vs_cache"`
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
func (s *Server) handleRecreateVectorStore(c *gin.Context) {
	var req recreateRequest
	if err := decodeJSON(c, &req); err != nil {
		writeError(c, err)
		return
	}
	sp, err := splitOptions(req.ChunkSize, req.ChunkOverlap, req.ZhTitleEnhance)
	if err != nil {
		writeError(c, err)
		return
	}
	if err := kb.ValidName(req.Name); err != nil {
		kbFail(c, req.Name, err, nil)
		return
	}
	allow := req.AllowEmptyKB == nil || *req.AllowEmptyKB
	ctx, done := s.replyContext(c.Request.Context())
	defer done()
	out := newSSE(c)
	var sendErr error
	send := func(e recreateEvent) {
		if sendErr == nil {
			sendErr = out.Send(e)
		}
	}
	_, err = s.kb.Recreate(ctx, req.Name, kb.RecreateOptions{
		SplitOptions: sp, AllowEmpty: allow, VectorStore: req.VSType, EmbedModel: req.EmbedModel,
	}, func(p kb.Progress) {
		switch p.Stage {
		case kb.StageDone, kb.StageSkipped:
			send(recreateEvent{Code: 200, Msg: fmt.Sprintf("(%d / %d): %s", p.Index, p.Total, p.File), Total: p.Total, Finished: p.Index, Doc: p.File})
		case kb.StageFailed:
			send(recreateEvent{Code: 500, Msg: fmt.Sprintf("添加文件‘%s’到知识库‘%s’时出错：%v。已跳过。", p.File, req.Name, p.Err)})
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
