package llm

import (
	"io"
	"strings"
	"testing"
)

// TestRecordingBodyTail: whatever the sizes of the reads, an attempt keeps
// the last tailSize bytes of the body, by which a stream's end is told.
func TestRecordingBodyTail(t *testing.T) {
	body := strings.Repeat(`data: {"choices":[{"delta":{"content":"乾"}}]}`+"\n\n", 20) + "data: [DONE]\n\n"
	for _, size := range []int{1, 3, 7, 63, 64, 65, 200, 4096} {
		at := &attempt{}
		r := &recordingBody{ReadCloser: io.NopCloser(strings.NewReader(body)), at: at}
		buf := make([]byte, size)
		for {
			if _, err := r.Read(buf); err != nil {
				break
			}
		}
		if want := body[len(body)-tailSize:]; string(at.last) != want {
			t.Errorf("reads of %d bytes: tail %q, want %q", size, at.last, want)
		}
		if !at.sawDone() {
			t.Errorf("reads of %d bytes: [DONE] not seen", size)
		}
	}
}
