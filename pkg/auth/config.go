package auth

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
)

// Config is the access section of mixchat's configuration (yaml "auth").
type Config struct {
	// Enabled requires an API key (Authorization: Bearer mx-...) on every
	// request but /healthz, /readyz and the web app's static files. Off, the
	// server has one anonymous user who may do everything: allowed on a
	// loopback address, refused elsewhere unless AllowAnonymousRemote.
	Enabled bool `yaml:"enabled"`
	// AllowAnonymousRemote lets a server without authentication listen on a
	// non-loopback address (behind an authenticating proxy, say); it then
	// logs a warning at start.
	AllowAnonymousRemote bool `yaml:"allow_anonymous_remote"`
	// RequestsPerMinute and TokensPerMinute are each key's default limits
	// (0: unlimited); a key's own limits override them.
	RequestsPerMinute int `yaml:"requests_per_minute"`
	TokensPerMinute   int `yaml:"tokens_per_minute"`
	// CORS: which browser origins may call the API.
	CORS CORSConfig `yaml:"cors"`
}

// CORSConfig configures cross-origin requests.
type CORSConfig struct {
	// AllowedOrigins lists origins such as https://app.example.com; "*"
	// allows any origin (without credentials). Empty: no CORS headers, so
	// browsers allow only the server's own origin (the bundled web app).
	AllowedOrigins []string `yaml:"allowed_origins"`
	// MaxAge is how long browsers may cache a preflight answer.
	MaxAge time.Duration `yaml:"max_age"`
}

// DefaultConfig is authentication off, no limits, no CORS.
func DefaultConfig() Config {
	return Config{CORS: CORSConfig{MaxAge: 10 * time.Minute}}
}

// Validate checks the settings; messages name the field (auth.*).
func (c Config) Validate() error {
	var errs []error
	if c.RequestsPerMinute < 0 {
		errs = append(errs, fmt.Errorf("auth.requests_per_minute: %d: must not be negative", c.RequestsPerMinute))
	}
	if c.TokensPerMinute < 0 {
		errs = append(errs, fmt.Errorf("auth.tokens_per_minute: %d: must not be negative", c.TokensPerMinute))
	}
	if c.CORS.MaxAge < 0 {
		errs = append(errs, fmt.Errorf("auth.cors.max_age: %s: must not be negative", c.CORS.MaxAge))
	}
	for _, o := range c.CORS.AllowedOrigins {
		if o != "*" && !strings.HasPrefix(o, "http://") && !strings.HasPrefix(o, "https://") {
			errs = append(errs, fmt.Errorf("auth.cors.allowed_origins: %q: want \"*\" or an origin such as https://app.example.com", o))
		}
	}
	return errors.Join(errs...)
}

// ErrAnonymousRemote is returned by CheckListen for a server without
// authentication on a non-loopback address.
var ErrAnonymousRemote = errors.New("authentication is off on a non-loopback address")

// CheckListen decides whether a server may start on addr (HOST:PORT) with
// these settings. warning, when not empty, must be logged at start.
func (c Config) CheckListen(addr string) (warning string, err error) {
	if c.Enabled {
		return "", nil
	}
	if Loopback(addr) {
		return "", nil
	}
	if c.AllowAnonymousRemote {
		return "authentication is off and the server listens on " + addr + ", a non-loopback address: anyone who can reach it has full access (auth.allow_anonymous_remote is true)", nil
	}
	return "", fmt.Errorf("%w: server.addr %s is reachable from other machines and auth.enabled is false; "+
		"set auth.enabled: true and create keys with \"mixchat keys create --user NAME\", "+
		"or listen on 127.0.0.1, or set auth.allow_anonymous_remote: true to serve without authentication on purpose", ErrAnonymousRemote, addr)
}

// Loopback reports whether addr (HOST:PORT) listens on the loopback
// interface only: localhost, 127.0.0.0/8 or ::1. An empty host (all
// interfaces) is not loopback.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
