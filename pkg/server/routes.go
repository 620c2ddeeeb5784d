package server

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// need names the optional dependency an endpoint cannot serve without.
type need int

const (
	needNothing  need = iota
	needKeys          // the key store (authentication on)
	needLongTerm      // long-term memory
	needKB            // the knowledge-base service
	needSearch        // the search service
)

// endpoint is one route of the API.
type endpoint struct {
	method, path string
	needs        need
	handle       gin.HandlerFunc
}

// endpoints registers every endpoint of the API in one place; one that
// needs an optional dependency answers 503 when the server lacks it. A
// handler of a JSON body gets it decoded and validated (withBody,
// withTurn).
func (s *Server) endpoints(r *gin.Engine) {
	get, post, put, del := http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete
	for _, e := range []endpoint{
		// Operations: /healthz says the process is alive; /readyz says it
		// can serve (its dependencies answer and it is not shutting down);
		// /metrics is the Prometheus metrics of this process (see
		// docs/operations.md, "Observability").
		{get, "/healthz", needNothing, s.handleHealth},
		{get, "/readyz", needNothing, s.handleReady},
		{get, "/metrics", needNothing, gin.WrapH(s.obs.Handler())},

		// Keys and knowledge-base access: whoami for everyone, the rest for
		// admins.
		{get, "/access/whoami", needNothing, s.handleWhoAmI},
		{get, "/access/keys", needKeys, s.handleListKeys},
		{post, "/access/keys", needKeys, withBody(s.handleCreateKey)},
		{del, "/access/keys/:id", needKeys, s.handleRevokeKey},
		{get, "/access/kbs/:name", needKeys, s.handleGetKBAccess},
		{put, "/access/kbs/:name", needKeys, withBody(s.handleSetKBAccess)},

		{get, "/server/list_models", needNothing, s.handleListModels},
		{post, "/chat/chat", needNothing, withTurn(s, s.handleChat)},
		{post, "/chat/feedback", needNothing, withBody(s.handleFeedback)},

		{get, "/conversations", needNothing, s.handleListConversations},
		{post, "/conversations", needNothing, withBody(s.handleCreateConversation)},
		{get, "/conversations/:id", needNothing, s.handleGetConversation},
		{http.MethodPatch, "/conversations/:id", needNothing, withBody(s.handleRenameConversation)},
		{del, "/conversations/:id", needNothing, s.handleDeleteConversation},
		{get, "/conversations/:id/messages", needNothing, s.handleListMessages},
		{get, "/conversations/:id/memory", needNothing, s.handleMemory},

		{post, "/conversations/:id/close", needLongTerm, s.handleCloseConversation},
		{get, "/conversations/:id/system", needLongTerm, s.handleGetSystem},
		{put, "/conversations/:id/system", needLongTerm, withBody(s.handlePutSystem)},
		{get, "/users/:id/memory", needLongTerm, s.handleGetUserMemory},
		{put, "/users/:id/memory", needLongTerm, withBody(s.handlePutUserMemory)},
		{del, "/users/:id/memory", needLongTerm, s.handleDeleteUserMemory},

		{get, "/knowledge_base/list_knowledge_bases", needKB, s.handleListKBs},
		{post, "/knowledge_base/create_knowledge_base", needKB, withBody(s.handleCreateKB)},
		{post, "/knowledge_base/delete_knowledge_base", needKB, s.handleDeleteKB},
		{post, "/knowledge_base/update_info", needKB, withBody(s.handleUpdateKBInfo)},
		{get, "/knowledge_base/list_files", needKB, s.handleListKBFiles},
		{post, "/knowledge_base/search_docs", needKB, withBody(s.handleSearchDocs)},
		{post, "/knowledge_base/upload_docs", needKB, s.handleUploadDocs},
		{post, "/knowledge_base/delete_docs", needKB, withBody(s.handleDeleteDocs)},
		{post, "/knowledge_base/update_docs", needKB, withBody(s.handleUpdateDocs)},
		{get, "/knowledge_base/download_doc", needKB, s.handleDownloadDoc},
		{post, "/knowledge_base/recreate_vector_store", needKB, withBody(s.handleRecreateVectorStore)},
		{post, "/chat/knowledge_base_chat", needKB, withTurn(s, s.handleKBChat)},

		// Search: Chatchat 0.2's endpoints and /debug/search, which returns
		// what a search finds without calling a model.
		{post, "/chat/search_engine_chat", needSearch, withTurn(s, s.handleSearchChat)},
		{get, "/server/list_search_engines", needSearch, s.handleListSearchEngines},
		{post, "/server/list_search_engines", needSearch, s.handleListSearchEngines},
		{post, "/debug/search", needSearch, withBody(s.handleDebugSearch)},

		// The mix and its OpenAI-compatible API.
		{post, "/chat/mix_chat", needNothing, withBody(s.handleMixChat)},
		{post, "/debug/condense", needNothing, withTurn(s, s.handleCondense)},
		{get, "/v1/models", needNothing, s.handleOpenAIModels},
		{get, "/v1/models/:id", needNothing, s.handleOpenAIModel},
		{post, "/v1/chat/completions", needNothing, s.handleOpenAIChat},
	} {
		r.Handle(e.method, e.path, s.gated(e.needs, e.handle))
	}
	s.webRoutes(r)
}

// gated serves h, or writes 503 when the server lacks what it needs.
func (s *Server) gated(n need, h gin.HandlerFunc) gin.HandlerFunc {
	if n == needNothing {
		return h
	}
	return func(c *gin.Context) {
		if err := s.missing(n); err != nil {
			writeError(c, err)
			return
		}
		h(c)
	}
}

// missing returns the 503 error for an endpoint needing n when the server
// lacks it, or nil.
func (s *Server) missing(n need) error {
	switch n {
	case needKeys:
		if s.opts.Access.Keys == nil {
			return errUnavailable("authentication is off on this server (auth.enabled)")
		}
	case needLongTerm:
		if s.longTerm() == nil {
			return errUnavailable("long-term memory is not configured")
		}
	case needKB:
		if s.kb == nil {
			return errUnavailable("knowledge bases are not configured on this server")
		}
	case needSearch:
		if s.search == nil {
			return errUnavailable("search is not configured on this server")
		}
	}
	return nil
}

// longTerm returns the server's long-term memory, or nil without one.
func (s *Server) longTerm() LongTermMemory {
	lt, _ := s.opts.Memory.(LongTermMemory)
	return lt
}
