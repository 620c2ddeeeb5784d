package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/gin-gonic/gin"
)

// fuzzDecode decodes body into a new T as a handler does (decodeJSON, the
// body limit of the middleware, validateHistory): it must not panic, must
// fail only with a client error (4xx), and what it accepts must survive a
// round trip through JSON unchanged.
func fuzzDecode[T any](t *testing.T, body []byte, history func(*T) []historyItem) {
	gin.SetMode(gin.ReleaseMode)
	w := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(w)
	c.Request = httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	c.Request.Header.Set("Content-Type", "application/json")
	c.Request.Body = http.MaxBytesReader(w, c.Request.Body, 64<<10)
	var v T
	if err := decodeJSON(c, &v); err != nil {
		if st := errorStatus(err); st < 400 || st > 499 {
			t.Fatalf("decode error %v maps to status %d, want 4xx", err, st)
		}
		return
	}
	if _, err := validateHistory(history(&v)); err != nil {
		if st := errorStatus(err); st != http.StatusBadRequest {
			t.Fatalf("history error %v maps to status %d", err, st)
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("re-encode %+v: %v", v, err)
	}
	var again T
	if err := json.Unmarshal(b, &again); err != nil {
		t.Fatalf("decode re-encoded %s: %v", b, err)
	}
	// The first decode replaced invalid UTF-8; from then on it is stable.
	b2, _ := json.Marshal(again)
	var third T
	_ = json.Unmarshal(b2, &third)
	if !reflect.DeepEqual(again, third) {
		t.Fatalf("round trip changed the request:\n%+v\n%+v", again, third)
	}
}

// FuzzDecodeChatRequest fuzzes the body of POST /chat/chat.
//
//	go test ./pkg/server -run '^$' -fuzz FuzzDecodeChatRequest -fuzztime 30s
func FuzzDecodeChatRequest(f *testing.F) {
	for _, s := range []string{
		`{"query":"乾卦是什么意思？","conversation_id":"c1","history_len":3,"stream":true,"model_name":"offline","temperature":0.7,"max_tokens":512,"prompt_name":"default","memory":"window"}`,
		`{"query":"q","history":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"bot","content":"c"}]}`,
		`{"query":1}`, `{"temperature":"hot"}`, `{"query":"a"} {"query":"b"}`, `[]`, `null`, ``, `{"query":"\ud800"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fuzzDecode(t, body, func(r *chatRequest) []historyItem { return r.History })
	})
}

// FuzzDecodeMixRequest fuzzes the body of POST /chat/mix_chat.
//
//	go test ./pkg/server -run '^$' -fuzz FuzzDecodeMixRequest -fuzztime 30s
func FuzzDecodeMixRequest(f *testing.F) {
	for _, s := range []string{
		`{"query":"乾卦是什么意思？","conversation_id":"c1","knowledge_base_name":"zhouyi","knowledge_base_names":["a","b"],"search_engine_name":"local","top_k":3,"score_threshold":1.0,"answerers":["llm","kb"],"fusion":"context","memory":"summary","stream":true}`,
		`{"query":"q","history":[{"role":"human","content":"a"}],"history_len":-1,"max_tokens":0}`,
		`{"top_k":1e400}`, `{"answerers":null}`, `{"score_threshold":-0}`, `{"query":"x","temperature":3.4e39}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fuzzDecode(t, body, func(r *mixRequest) []historyItem { return r.History })
	})
}
