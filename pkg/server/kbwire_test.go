package server

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/mixchat/mixchat/pkg/kb"
)

// TestKBWireNames: list_knowledge_bases?detail=true and list_files?detail=true
// show knowledge bases and documents in Chatchat's field names, in this
// order (kb's own types carry none).
func TestKBWireNames(t *testing.T) {
	at := time.Date(2026, 3, 1, 8, 30, 0, 0, time.FixedZone("CST", 8*3600))
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"info", kbInfoOf(kb.Info{Name: "zhouyi", Info: "周易", VectorStore: "embedded", EmbedModel: "hash-512", Dim: 512, Files: 2, Chunks: 183, CreatedAt: at, Profile: "zhouyi", Indexing: true, Pending: 4096}),
			`{"kb_name":"zhouyi","kb_info":"周易","vs_type":"embedded","embed_model":"hash-512","dim":512,"file_count":2,"docs_count":183,"create_time":"2026-03-01T08:30:00+08:00","profile":"zhouyi","indexing":true,"pending_vectors":4096}`},
		{"file", kbFileInfoOf(kb.FileInfo{Name: "乾.md", Hash: "ab12", Size: 1024, ModTime: at, Chunks: 3, ChunkSize: 250, ChunkOverlap: 50, ZhTitleEnhance: true, CreatedAt: at, UpdatedAt: at.Add(time.Hour)}),
			`{"file_name":"乾.md","hash":"ab12","file_size":1024,"file_mtime":"2026-03-01T08:30:00+08:00","docs_count":3,"custom_docs":false,"chunk_size":250,"chunk_overlap":50,"zh_title_enhance":true,"create_time":"2026-03-01T08:30:00+08:00","update_time":"2026-03-01T09:30:00+08:00"}`},
	} {
		b, err := json.Marshal(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, b, tc.want)
		}
	}
}
