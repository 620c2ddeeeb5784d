package llm

import (
	"encoding/json"
	"reflect"
	"testing"
)

// chunkCases are stream chunks of the usual shape and of every shape
// decodeChunk leaves to encoding/json.
var chunkCases = []string{
	`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"乾，"},"finish_reason":null}]}`,
	`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}`,
	`{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
	`{"id":"c1","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`,
	`{"choices":[{"delta":{"content":"a\nb \"q\" \u4e7e \ud83d\ude00"}}]}`,
	`{"choices":[{"delta":{"content":"x"}},{"delta":{"content":"y"},"finish_reason":"length"}]}`,
	`{"choices":null,"usage":null}`,
	`{"choices":[null,{"delta":null,"finish_reason":null}]}`,
	` { "choices" : [ { "delta" : { "content" : "sp" } } ] } `,
	`{"Choices":[{"delta":{"content":"case"}}]}`,
	`{"choices":[{"Delta":{"Content":"case"}}],"USAGE":{"total_tokens":1}}`,
	`{"choices":[{"delta":{"content":"one"}}],"choices":[{"delta":{"content":"two"}}]}`,
	`{"choices":[{"delta":{"content":"a","content":"b"}}]}`,
	`{"choices":[{"delta":{"content":5}}]}`,
	`{"choices":[{"finish_reason":1}]}`,
	`{"choices":{}}`,
	`{"usage":{"total_tokens":"x"}}`,
	`{"choices":[{"delta":{"content":"bad utf8 ` + "\xff" + `"}}]}`,
	`{"id":"` + "\xfe" + `","choices":[]}`,
	`{"x":[1,-2.5e+3,0,true,false,null,{"a":[[]]},"s\\t"],"choices":[]}`,
	`{"x":01}`, `{"x":1.}`, `{"x":-}`, `{"x":1e}`, `{"x":tru}`, `{"x":"\q"}`, `{"x":"\u12"}`,
	`{"x":"ctl` + "\x01" + `"}`, `{"choices":[]}x`, `{"choices":[],}`, `{"choices":[1,]}`, `{`, `[]`, `null`, ``,
	`{"a":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
}

// TestDecodeChunk checks decodeChunk against json.Unmarshal, which it
// must match in the value decoded and in failing or not.
func TestDecodeChunk(t *testing.T) {
	for _, raw := range chunkCases {
		checkDecodeChunk(t, []byte(raw))
	}
}

func checkDecodeChunk(t *testing.T, raw []byte) {
	t.Helper()
	var got, want streamChunk
	gerr := decodeChunk(raw, &got)
	werr := json.Unmarshal(raw, &want)
	if (gerr == nil) != (werr == nil) {
		t.Fatalf("%q: error %v, encoding/json's %v", raw, gerr, werr)
	}
	if werr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: decoded %+v, encoding/json %+v", raw, got, want)
	}
}

// FuzzDecodeChunk checks decodeChunk against json.Unmarshal on arbitrary
// bytes.
//
//	go test ./pkg/llm -run '^$' -fuzz FuzzDecodeChunk -fuzztime 30s
func FuzzDecodeChunk(f *testing.F) {
	for _, raw := range chunkCases {
		f.Add([]byte(raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkDecodeChunk(t, raw) })
}

// BenchmarkDecodeChunk decodes a usual chunk with decodeChunk and with
// encoding/json.
func BenchmarkDecodeChunk(b *testing.B) {
	raw := []byte(chunkCases[0])
	b.Run("decodeChunk", func(b *testing.B) {
		var c streamChunk
		for b.Loop() {
			if err := decodeChunk(raw, &c); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		var c streamChunk
		for b.Loop() {
			c = streamChunk{}
			if err := json.Unmarshal(raw, &c); err != nil {
				b.Fatal(err)
			}
		}
	})
}
