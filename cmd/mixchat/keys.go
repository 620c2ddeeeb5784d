package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mixchat/mixchat/internal/app"
	"github.com/mixchat/mixchat/pkg/auth"
)

const keysUsage = `Usage:
  mixchat keys [--config FILE] [--data DIR] create --user NAME [--role user|admin] [--name LABEL] [--rpm N] [--tpm N]
  mixchat keys [--config FILE] [--data DIR] ls [--user NAME]
  mixchat keys [--config FILE] [--data DIR] revoke KEY_ID|PREFIX

Keys live in the configured store (store.driver, store.dsn), so every server
on that database accepts a new key and refuses a revoked one at once. The
token is printed once by create and never stored: only its SHA-256 is.
`

// runKeys runs "mixchat keys ...": API key administration on the
// configured store, in this process (no server needed).
func runKeys(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs, f := appFlags("keys", keysUsage, stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	rest := fs.Args()
	if len(rest) == 0 {
		fs.Usage()
		return errors.New("keys: no subcommand given (create, ls, revoke)")
	}
	if rest[0] == "help" || (rest[0] != "create" && rest[0] != "ls" && rest[0] != "list" && wantsHelp(rest)) {
		fs.SetOutput(stdout)
		fs.Usage()
		return nil
	}
	cfg, err := f.Load()
	if err != nil {
		return err
	}
	open := func() (*auth.Store, error) { return app.OpenKeyStore(ctx, cfg) }
	switch rest[0] {
	case "create":
		return keysCreate(ctx, open, rest[1:], stdout, stderr)
	case "ls", "list":
		return keysList(ctx, open, rest[1:], stdout, stderr)
	case "revoke", "rm":
		return keysRevoke(ctx, open, rest[1:], stdout, stderr)
	}
	fs.Usage()
	return fmt.Errorf("keys: unknown subcommand %q (create, ls, revoke)", rest[0])
}

func keysCreate(ctx context.Context, open func() (*auth.Store, error), args []string, stdout, stderr io.Writer) error {
	fs := commandFlags("keys create", "", stderr)
	user := fs.String("user", "", "the user the key acts as (required)")
	role := fs.String("role", "user", "user or admin (admin manages knowledge bases, keys and configuration)")
	name := fs.String("name", "", "a label to recognise the key by")
	rpm := fs.Int("rpm", 0, "requests per minute for this key (0: auth.requests_per_minute)")
	tpm := fs.Int("tpm", 0, "LLM tokens per minute for this key (0: auth.tokens_per_minute)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *user == "" || fs.NArg() > 0 {
		fs.Usage()
		return errors.New("keys create: --user is required and takes no arguments")
	}
	r, err := auth.ParseRole(*role)
	if err != nil {
		return fmt.Errorf("keys create: --role: %w", err)
	}
	st, err := open()
	if err != nil {
		return err
	}
	defer st.Close()
	tok, k, err := st.CreateKey(ctx, auth.KeySpec{UserID: *user, Role: r, Name: *name, RequestsPerMinute: *rpm, TokensPerMinute: *tpm})
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "created key %s for user %s (role %s); the token below is shown once, store it now:\n", k.ID, k.UserID, k.Role)
	fmt.Fprintln(stdout, tok)
	return nil
}

func keysList(ctx context.Context, open func() (*auth.Store, error), args []string, stdout, stderr io.Writer) error {
	fs := commandFlags("keys ls", "", stderr)
	user := fs.String("user", "", "only this user's keys")
	if err := fs.Parse(args); err != nil {
		return err
	}
	st, err := open()
	if err != nil {
		return err
	}
	defer st.Close()
	keys, err := st.Keys(ctx, *user)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tPREFIX\tUSER\tROLE\tNAME\tRPM\tTPM\tCREATED\tSTATUS")
	for _, k := range keys {
		status := "active"
		if k.RevokedAt != 0 {
			status = "revoked " + time.UnixMilli(k.RevokedAt).UTC().Format(time.DateTime)
		}
		fmt.Fprintf(w, "%s\t%s…\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Prefix, k.UserID, k.Role, dash(k.Name),
			limit(k.RequestsPerMinute), limit(k.TokensPerMinute), time.UnixMilli(k.CreatedAt).UTC().Format(time.DateTime), status)
	}
	return w.Flush()
}

func dash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}

func limit(n int) string {
	if n <= 0 {
		return "default"
	}
	return fmt.Sprint(n)
}

func keysRevoke(ctx context.Context, open func() (*auth.Store, error), args []string, stdout, stderr io.Writer) error {
	if len(args) != 1 {
		fmt.Fprint(stderr, keysUsage)
		return errors.New("keys revoke: give one key id (or token prefix) as shown by mixchat keys ls")
	}
	st, err := open()
	if err != nil {
		return err
	}
	defer st.Close()
	k, err := st.RevokeKey(ctx, strings.TrimSuffix(args[0], "…"))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "revoked %s (user %s)\n", k.ID, k.UserID)
	return nil
}
