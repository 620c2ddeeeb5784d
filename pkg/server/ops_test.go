package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/mixchat/mixchat/pkg/chat"
	"github.com/mixchat/mixchat/pkg/kb"
	"github.com/mixchat/mixchat/pkg/memory"
)

// fakeStore is a memory.Store whose Conversation is a function field; the
// other methods panic (the embedded nil interface), so a test fails loudly
// if /readyz calls anything else.
type fakeStore struct {
	memory.Store
	conversation func(ctx context.Context, id string) (memory.Conversation, error)
}

func (f fakeStore) Conversation(ctx context.Context, id string) (memory.Conversation, error) {
	return f.conversation(ctx, id)
}

// pingStore is a memory.Store with a Ping function field.
type pingStore struct {
	memory.Store
	ping func(ctx context.Context) error
}

func (p pingStore) Ping(ctx context.Context) error { return p.ping(ctx) }

type readyFixture struct {
	store memory.Store
	kbDir string // "" = no knowledge-base service
}

// lookupFixture is a store without Ping whose conversation lookup fails
// with err.
func lookupFixture(err error) func(*testing.T) readyFixture {
	return func(*testing.T) readyFixture {
		return readyFixture{store: fakeStore{conversation: func(context.Context, string) (memory.Conversation, error) {
			return memory.Conversation{}, err
		}}}
	}
}

func newReadyServer(t *testing.T, f readyFixture) (*Server, string) {
	t.Helper()
	models, _ := offlineModels()
	opts := Options{Store: f.store, Models: models, Chat: chat.New(models, chat.Options{}), Version: "v-test"}
	if f.kbDir != "" {
		cfg := kb.DefaultConfig()
		cfg.Dir = f.kbDir
		opts.KB = newHashKB(t, cfg, 64, models)
	}
	s := New(opts)
	return s, serveTest(t, s).URL
}

func getReady(t *testing.T, url string) (int, readyReply) {
	t.Helper()
	resp, err := http.Get(url + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r readyReply
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("/readyz reply is not JSON: %v", err)
	}
	return resp.StatusCode, r
}

func TestReadyz(t *testing.T) {
	closed := openSQLite(t)
	closed.Close()
	removedKB := filepath.Join(t.TempDir(), "kb")

	tests := []struct {
		name       string
		fixture    func(t *testing.T) readyFixture
		after      func(t *testing.T, f readyFixture) // runs once the server is up
		wantCode   int
		wantStatus string
		wantChecks map[string]string
	}{{
		name:       "sqlite and kb ready",
		fixture:    func(t *testing.T) readyFixture { return readyFixture{store: openSQLite(t), kbDir: t.TempDir()} },
		wantCode:   http.StatusOK,
		wantStatus: "ready",
		wantChecks: map[string]string{"store": checkOK, "kb": checkOK},
	}, {
		name:       "no kb service is not a failure",
		fixture:    func(t *testing.T) readyFixture { return readyFixture{store: openSQLite(t)} },
		wantCode:   http.StatusOK,
		wantStatus: "ready",
		wantChecks: map[string]string{"store": checkOK, "kb": checkNotConfigured},
	}, {
		name:       "closed store",
		fixture:    func(t *testing.T) readyFixture { return readyFixture{store: closed, kbDir: t.TempDir()} },
		wantCode:   http.StatusServiceUnavailable,
		wantStatus: "not_ready",
		wantChecks: map[string]string{"store": checkFailed, "kb": checkOK},
	}, {
		name:    "kb folder gone",
		fixture: func(t *testing.T) readyFixture { return readyFixture{store: openSQLite(t), kbDir: removedKB} },
		after: func(t *testing.T, f readyFixture) {
			if err := os.RemoveAll(f.kbDir); err != nil {
				t.Fatal(err)
			}
		},
		wantCode:   http.StatusServiceUnavailable,
		wantStatus: "not_ready",
		wantChecks: map[string]string{"store": checkOK, "kb": checkFailed},
	}, {
		name: "ping gets a deadline",
		fixture: func(t *testing.T) readyFixture {
			return readyFixture{store: pingStore{ping: func(ctx context.Context) error {
				if _, ok := ctx.Deadline(); !ok {
					return errors.New("no deadline")
				}
				return nil
			}}}
		},
		wantCode:   http.StatusOK,
		wantStatus: "ready",
		wantChecks: map[string]string{"store": checkOK},
	}, {
		name:       "store without Ping: a lookup finding nothing is ready",
		fixture:    lookupFixture(memory.ErrNotFound),
		wantCode:   http.StatusOK,
		wantStatus: "ready",
		wantChecks: map[string]string{"store": checkOK},
	}, {
		name:       "store without Ping: a failing lookup is not ready",
		fixture:    lookupFixture(errors.New("connection refused")),
		wantCode:   http.StatusServiceUnavailable,
		wantStatus: "not_ready",
		wantChecks: map[string]string{"store": checkFailed},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.fixture(t)
			_, url := newReadyServer(t, f)
			if tt.after != nil {
				tt.after(t, f)
			}
			code, r := getReady(t, url)
			if code != tt.wantCode || r.Status != tt.wantStatus {
				t.Fatalf("/readyz = %d %q, want %d %q (%+v)", code, r.Status, tt.wantCode, tt.wantStatus, r.Checks)
			}
			if r.Version != "v-test" {
				t.Errorf("version = %q, want v-test", r.Version)
			}
			for name, want := range tt.wantChecks {
				got := r.Checks[name]
				if got.Status != want {
					t.Errorf("check %s = %+v, want status %s", name, got, want)
				}
				if (got.Status == checkFailed) != (got.Error != "") {
					t.Errorf("check %s: status %s with error %q", name, got.Status, got.Error)
				}
			}
		})
	}
}

func TestReadyzDraining(t *testing.T) {
	for _, stop := range []struct {
		name string
		fn   func(*Server)
	}{{"Drain", (*Server).Drain}, {"CutStreams", (*Server).CutStreams}} {
		t.Run(stop.name, func(t *testing.T) {
			s, url := newReadyServer(t, readyFixture{store: openSQLite(t)})
			if code, _ := getReady(t, url); code != http.StatusOK {
				t.Fatalf("before %s: /readyz = %d", stop.name, code)
			}
			stop.fn(s)
			code, r := getReady(t, url)
			if code != http.StatusServiceUnavailable || r.Status != "draining" {
				t.Fatalf("after %s: /readyz = %d %q, want 503 draining", stop.name, code, r.Status)
			}
			// Liveness is unaffected: the process is healthy, just leaving.
			resp, err := http.Get(url + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("after %s: /healthz = %d, want 200", stop.name, resp.StatusCode)
			}
		})
	}
}
