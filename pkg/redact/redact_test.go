package redact

import (
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
)

func TestMessage(t *testing.T) {
	_, statErr := os.Stat("/var/lib/mixchat/kb/zy/content/乾.md")
	for _, tc := range []struct {
		err        error
		want, gone string
	}{
		{fmt.Errorf("save 乾.md: %w", statErr), "stat 乾.md", "/var/lib"},
		{fmt.Errorf("rename: %w", &os.LinkError{Op: "rename", Old: "/data/kb/.upload-1", New: "/data/kb/x.md", Err: os.ErrExist}), "rename .upload-1 x.md", "/data"},
		{fmt.Errorf("fetch https://example.com/a: %w", &net.DNSError{Err: "no such host", Name: "example.com", Server: "10.0.0.2:53"}),
			"fetch https://example.com/a: lookup example.com: no such host", "10.0.0.2"},
		{fmt.Errorf("plain"), "plain", "/"},
	} {
		got := Message(tc.err)
		if !strings.Contains(got, tc.want) || strings.Contains(got, tc.gone) {
			t.Errorf("Message(%v) = %q; want %q without %q", tc.err, got, tc.want, tc.gone)
		}
	}
}
