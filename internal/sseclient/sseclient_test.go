package sseclient

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestRead(t *testing.T) {
	tests := []struct {
		name, stream string
		want         []string
	}{
		{"one event per data line", "data: {\"a\":1}\n\ndata: {\"a\":2}\n\n", []string{`{"a":1}`, `{"a":2}`}},
		{"no space after the colon", "data:x\n\n", []string{"x"}},
		{"lines of one event are joined", "data: a\ndata: b\n\n", []string{"a\nb"}},
		{"comments and other fields skipped", ": ping\nevent: delta\nid: 3\ndata: x\n\n", []string{"x"}},
		{"last event without its blank line", "data: a\n\ndata: b", []string{"a", "b"}},
		{"events without data skipped", "event: x\n\n\n\ndata: y\n\n", []string{"y"}},
		{"empty data kept", "data:\n\n", []string{""}},
		{"CRLF lines", "data: a\r\n\r\n", []string{"a"}},
		{"empty stream", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			err := Read(strings.NewReader(tt.stream), func(d []byte) error {
				got = append(got, string(d))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
				t.Errorf("events %q, want %q", got, tt.want)
			}
		})
	}
}

func TestReadStopsOnError(t *testing.T) {
	boom := errors.New("boom")
	n := 0
	err := Read(strings.NewReader("data: a\n\ndata: b\n\n"), func([]byte) error { n++; return boom })
	if !errors.Is(err, boom) || n != 1 {
		t.Errorf("err %v after %d events, want boom after 1", err, n)
	}
	err = Read(iotest.ErrReader(io.ErrUnexpectedEOF), func([]byte) error { return nil })
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("broken stream: err %v", err)
	}
}

func TestDecode(t *testing.T) {
	type ev struct {
		Text string `json:"text"`
		Done bool   `json:"done"`
	}
	stream := "data: {\"text\":\"a\"}\n\ndata: {\"text\":\"b\",\"done\":true}\n\ndata: {\"text\":\"c\"}\n\n"
	var got []string
	err := Decode(strings.NewReader(stream), func(e ev) (bool, error) {
		got = append(got, e.Text)
		return e.Done, nil
	})
	if err != nil || strings.Join(got, "") != "ab" {
		t.Errorf("got %q, %v; want ab and a stop at done", got, err)
	}

	got = nil
	err = Decode(strings.NewReader("data: {\"text\":\"a\"}\n\ndata: [DONE]\n\ndata: {\"text\":\"late\"}\n\n"), func(e ev) (bool, error) {
		got = append(got, e.Text)
		return false, nil
	})
	if err != nil || strings.Join(got, "") != "a" {
		t.Errorf("got %q, %v; want a, ended by [DONE]", got, err)
	}

	err = Decode(strings.NewReader("data: not json\n\n"), func(e ev) (bool, error) { return false, nil })
	if err == nil || !strings.Contains(err.Error(), "not json") {
		t.Errorf("bad event: err %v, want it quoted", err)
	}
}
