package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/mixchat/mixchat/internal/config"
)

// runHealthcheck probes a running server: it GETs http://ADDR/healthz (or
// --path) and fails unless the answer is 200. It is the container image's
// HEALTHCHECK, since the image has no curl or wget. ADDR is --addr, else
// server.addr from the configuration (file and MIXCHAT_* environment, as
// serve reads it), with an unspecified host (0.0.0.0, ::) probed on
// loopback.
func runHealthcheck(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := commandFlags("healthcheck", "", stderr)
	addr := fs.String("addr", "", "server address HOST:PORT (default: server.addr from the configuration)")
	configPath := fs.String("config", "", "YAML configuration file (see configs/mixchat.yaml)")
	path := fs.String("path", "/healthz", "path to probe: /healthz (alive) or /readyz (ready to serve)")
	timeout := fs.Duration("timeout", 5*time.Second, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *addr == "" {
		cfg, err := config.LoadConfig(*configPath, os.Environ())
		if err != nil {
			return fmt.Errorf("healthcheck: %w", err)
		}
		*addr = cfg.Server.Addr
	}
	target, err := probeURL(*addr, *path)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: %s answered %s: %s", target, resp.Status, body)
	}
	fmt.Fprintf(stdout, "%s %s\n", target, resp.Status)
	return nil
}

// probeURL is the URL to probe a server listening on addr: a wildcard or
// empty host becomes loopback.
func probeURL(addr, path string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("server address %q: %w", addr, err)
	}
	if port == "" || port == "0" {
		return "", errors.New("server address " + addr + " has no fixed port")
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	if len(path) == 0 || path[0] != '/' {
		path = "/" + path
	}
	return "http://" + net.JoinHostPort(host, port) + path, nil
}
