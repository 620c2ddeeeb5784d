package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/mixchat/mixchat/pkg/kb"
)

// The knowledge-base document endpoints: upload_docs, delete_docs,
// update_docs and download_doc (Chatchat's kb_doc_api.py), and the form
// and chunking fields they share with recreate_vector_store.

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

// splitFields are the chunking fields of update_docs and
// recreate_vector_store; validate reads them into options.
type splitFields struct {
	ChunkSize      *int  `json:"chunk_size"`
	ChunkOverlap   *int  `json:"chunk_overlap"`
	ZhTitleEnhance *bool `json:"zh_title_enhance"`

	options kb.SplitOptions
}

func (f *splitFields) validate() (err error) {
	f.options, err = splitOptions(f.ChunkSize, f.ChunkOverlap, f.ZhTitleEnhance)
	return err
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
	cfg := s.kb.Config()
	limit := cfg.MaxUploadBytes
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, limit)
	// The spool folder is made for the first file too large to be held
	// in memory.
	var spool string
	defer func() {
		if spool != "" {
			os.RemoveAll(spool)
		}
	}()
	var spoolErr error
	form, err := readUpload(c.Request, func() (string, error) {
		spool, spoolErr = s.kb.SpoolDir()
		return spool, spoolErr
	}, cfg.MaxUploadFiles)
	if spoolErr != nil {
		writeError(c, spoolErr)
		return
	}
	if err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			writeError(c, &Error{Status: http.StatusRequestEntityTooLarge, Msg: fmt.Sprintf("upload larger than %d bytes (kb.max_upload_bytes)", limit)})
		case errors.Is(err, errSlowBody):
			writeError(c, &Error{Status: http.StatusRequestTimeout,
				Msg: fmt.Sprintf("upload body slower than %d bytes a second (server.min_transfer_rate)", s.opts.Conns.MinTransferRate)})
		case errors.Is(err, errTooManyFiles):
			writeError(c, &Error{Status: http.StatusRequestEntityTooLarge,
				Msg: fmt.Sprintf("upload of more than %d files (kb.max_upload_files): split it into several requests", cfg.MaxUploadFiles)})
		case errors.Is(err, errSpool):
			writeError(c, err)
		default:
			writeError(c, errBadRequest("send multipart/form-data with files and knowledge_base_name: %v", err))
		}
		return
	}
	val := func(k string) string { return form.values[k] }
	name := val("knowledge_base_name")
	var opts kb.AddOptions
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
	failed := map[string]string{}
	res, err := s.kb.AddFiles(c.Request.Context(), name, form.files, opts, nil)
	if err != nil {
		kbFail(c, name, err, gin.H{"failed_files": failed})
		return
	}
	for f, msg := range failedFiles(c, name, res.Failed) {
		failed[f] = msg
	}
	skipped := res.Skipped
	if skipped == nil {
		skipped = []string{}
	}
	data := gin.H{"failed_files": failed, "skipped_files": skipped}
	if len(failed) > 0 && len(res.Added)+len(res.Skipped) == 0 {
		// Nothing was stored: say so, with the reasons.
		kbReply(c, uploadFailedCode(res.Failed, len(failed)-len(res.Failed)), "文件上传失败："+joinFailures(failed), data)
		return
	}
	kbReply(c, 200, "文件上传与向量化完成", data)
}

// uploadFailedCode is the envelope's code for an upload whose every file
// failed: 413 when each went past a limit (kb.max_chunks_per_file,
// kb.parse_timeout: the message names it), else Chatchat's 200 (its
// clients and its own API test expect 200 with failed_files, a file that
// exists already among them). unread counts the files the request could
// not even be read for.
func uploadFailedCode(failed map[string]error, unread int) int {
	if unread > 0 {
		return http.StatusOK
	}
	for _, err := range failed {
		var limit *kb.LimitError
		if !errors.As(err, &limit) {
			return http.StatusOK
		}
	}
	return http.StatusRequestEntityTooLarge
}

// joinFailures lists the failed files' messages, by file name.
func joinFailures(failed map[string]string) string {
	names := make([]string, 0, len(failed))
	for f := range failed {
		names = append(names, f)
	}
	slices.Sort(names)
	msgs := make([]string, len(names))
	for i, f := range names {
		msgs[i] = failed[f]
	}
	return strings.Join(msgs, "；")
}

// uploadName is the document name of an uploaded part: the file name as
// the client sent it, folders included ("wiki/Home.md", as Chatchat keeps
// them; mime/multipart's Part.FileName drops them), with Windows
// separators turned into "/". Names that could leave the KB folder are
// refused by the knowledge base.
func uploadName(p *multipart.Part) string {
	n := p.FileName()
	if _, params, err := mime.ParseMediaType(p.Header.Get("Content-Disposition")); err == nil && params["filename"] != "" {
		n = params["filename"]
	}
	return strings.ReplaceAll(n, "\\", "/")
}

type deleteDocsRequest struct {
	Name          string   `json:"knowledge_base_name"`
	FileNames     []string `json:"file_names"`
	DeleteContent bool     `json:"delete_content"`
	NotRefresh    bool     `json:"not_refresh_vs_cache"`
}

func (s *Server) handleDeleteDocs(c *gin.Context, req *deleteDocsRequest) {
	failed, err := s.kb.DeleteFiles(c.Request.Context(), req.Name, req.FileNames, req.DeleteContent)
	if err != nil {
		kbFail(c, req.Name, err, gin.H{"failed_files": failedFiles(c, req.Name, failed)})
		return
	}
	kbReply(c, 200, "文件删除完成", gin.H{"failed_files": failedFiles(c, req.Name, failed)})
}

type updateDocsRequest struct {
	Name      string   `json:"knowledge_base_name"`
	FileNames []string `json:"file_names"`
	splitFields
	OverrideCustomDocs bool            `json:"override_custom_docs"`
	Docs               json.RawMessage `json:"docs"`
	NotRefresh         bool            `json:"not_refresh_vs_cache"`
}

func (s *Server) handleUpdateDocs(c *gin.Context, req *updateDocsRequest) {
	docs, err := customDocs(req.Docs)
	if err != nil {
		writeError(c, errBadRequest("docs must be a JSON object of file name → [{page_content, metadata}]: %v", err))
		return
	}
	res, err := s.kb.UpdateFiles(c.Request.Context(), req.Name, req.FileNames, kb.UpdateOptions{
		SplitOptions: req.options, OverrideCustomDocs: req.OverrideCustomDocs, Docs: docs,
	}, nil)
	if err != nil {
		kbFail(c, req.Name, err, gin.H{"failed_files": failedFiles(c, req.Name, res.Failed)})
		return
	}
	kbReply(c, 200, "更新文档完成", gin.H{"failed_files": failedFiles(c, req.Name, res.Failed)})
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
	defer o.Close()
	ctype, inline := downloadType(file, preview)
	disposition := "attachment"
	if inline {
		disposition = "inline"
	}
	c.Header("Content-Type", ctype)
	if inline && ctype == "application/pdf" {
		// Browsers' PDF viewers do not run in a sandboxed document; a PDF
		// runs no script on this origin either way.
		c.Header("Content-Security-Policy", "default-src 'none'; object-src 'self'; frame-ancestors 'self'")
	}
	c.Header("Content-Disposition", disposition+"; filename*=UTF-8''"+url.PathEscape(path.Base(file)))
	// From the content folder or, with kb.store postgres, from the
	// database: any replica serves it.
	http.ServeContent(c.Writer, c.Request, path.Base(file), o.ModTime, o)
}

// downloadType is the Content-Type a document is served with and whether
// it is shown inline (preview). Nothing active (HTML, SVG, XML, scripts)
// is ever rendered on the app's origin: a preview shows text formats,
// those included, as text/plain, PDFs and raster images as themselves, and
// sends everything else as an attachment. The guard's CSP (sandbox) and
// nosniff come on top.
func downloadType(file string, preview bool) (ctype string, inline bool) {
	ext := strings.ToLower(path.Ext(file))
	switch ext {
	case ".pdf":
		return "application/pdf", preview
	case ".png", ".jpg", ".jpeg", ".gif", ".webp":
		return mime.TypeByExtension(ext), preview
	case ".txt", ".text", ".md", ".markdown", ".csv", ".json", ".jsonl", ".html", ".htm", ".xhtml",
		".xml", ".svg", ".js", ".mjs", ".css", ".yaml", ".yml", ".log":
		return "text/plain; charset=utf-8", preview
	}
	return "application/octet-stream", false
}
