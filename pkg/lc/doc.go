// Package lc puts mixchat inside langchaingo (github.com/tmc/langchaingo):
// Go programs built on langchaingo's interfaces use mixchat's knowledge
// bases and answerers directly.
//
//   - A knowledge base is a schema.Retriever: Retriever over a server's
//     /knowledge_base/search_docs, or KBRetriever over a *kb.Service in the
//     same process.
//   - Each mixchat model (mixchat-mix, mixchat-llm, mixchat-kb,
//     mixchat-search) is an llms.Model: Model over a server's
//     /v1/chat/completions, streamed through llms.WithStreamingFunc. The
//     sources, the single answerers' replies and the stored turn ride along
//     in the choice's GenerationInfo["mixchat"] (an *Extra).
//
// A Client names the server. NewClient talks HTTP to a running one;
// NewHandlerClient calls an http.Handler (server.Server.Handler()) in
// process, without a socket, streaming included. Both go through the
// server's public wire API only, so the adapters do not depend on how the
// server is put together inside.
package lc
