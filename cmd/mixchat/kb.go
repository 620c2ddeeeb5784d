package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mixchat/mixchat/pkg/kb"
)

const kbUsage = `Usage:
  mixchat kb create NAME [--info TEXT] [--vector-store embedded|qdrant]
  mixchat kb add    NAME PATH... [--override] [--force] [--chunk-size N] [--chunk-overlap N] [--zh-title-enhance]
                    PATH is a file or a folder (its supported files, kept with their relative paths)
  mixchat kb ls     [NAME]                    list knowledge bases, or the documents of one
  mixchat kb rm     NAME [FILE...] [--keep-original]
                    remove a knowledge base, or some of its documents
  mixchat kb search NAME[,NAME...] QUERY [-k N] [--min-relevance R] [--json]
`

// kbRun runs a subcommand of "mixchat kb" on its positional arguments,
// its flags parsed.
type kbRun func(ctx context.Context, svc *kb.Service, pos []string, stdout, stderr io.Writer) error

// kbSubcommand is a subcommand of "mixchat kb": its names, the number of
// positional arguments it takes (atMost -1: no limit) with the error when
// they do not fit, and flags, which registers its flags on a flag set and
// returns what runs it once they are parsed.
type kbSubcommand struct {
	names           []string
	atLeast, atMost int
	want            string
	flags           func(fs *flag.FlagSet) kbRun
}

// kbSubcommands are the subcommands kbUsage lists.
var kbSubcommands = []kbSubcommand{
	{[]string{"create"}, 1, 1, "kb create: give one knowledge base name", kbCreate},
	{[]string{"add"}, 2, -1, "kb add: give a knowledge base name and at least one file or folder", kbAdd},
	{[]string{"ls", "list"}, 0, 1, "kb ls: give at most one knowledge base name", kbList},
	{[]string{"rm", "remove", "delete"}, 1, -1, "kb rm: give a knowledge base name (and documents to remove only those)", kbRemove},
	{[]string{"search"}, 2, -1, "kb search: give knowledge base name(s) and a query", kbSearch},
}

// runKB runs "mixchat kb SUBCOMMAND ..." against svc.
func runKB(ctx context.Context, svc *kb.Service, args []string, stdout, stderr io.Writer) error {
	cmd, rest, err := splitCommand(args, kbUsage, stderr, "kb: name a subcommand: create, add, ls, rm, search")
	if err != nil {
		return err
	}
	for _, sc := range kbSubcommands {
		if !slices.Contains(sc.names, cmd) {
			continue
		}
		fs := commandFlags("mixchat kb "+sc.names[0], kbUsage, stderr)
		run := sc.flags(fs)
		pos, err := parseArgs(fs, rest, sc.atLeast, sc.atMost, sc.want)
		if err != nil {
			return err
		}
		return run(ctx, svc, pos, stdout, stderr)
	}
	if cmd == "help" || cmd == "-h" || cmd == "--help" {
		fmt.Fprint(stdout, kbUsage)
		return nil
	}
	fmt.Fprint(stderr, kbUsage)
	return fmt.Errorf("kb: unknown subcommand %q", cmd)
}

// parseInterspersed parses flags that may come before, between or after the
// positional arguments, and returns the positional ones.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// parseArgs parses args as parseInterspersed does and returns the
// positional arguments, failing with the message want unless there are at
// least atLeast of them and, when atMost >= 0, at most atMost.
func parseArgs(fs *flag.FlagSet, args []string, atLeast, atMost int, want string) ([]string, error) {
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) < atLeast || atMost >= 0 && len(pos) > atMost {
		return nil, errors.New(want)
	}
	return pos, nil
}

func kbCreate(fs *flag.FlagSet) kbRun {
	info := fs.String("info", "", "a description of the knowledge base")
	store := fs.String("vector-store", "", "embedded or qdrant (default: kb.vector_store)")
	profile := fs.String("profile", "", "the structure profile its documents are read with (the demo's zhouyi, or one of kb.profiles_dir)")
	return func(ctx context.Context, svc *kb.Service, pos []string, stdout, _ io.Writer) error {
		created, err := svc.Create(ctx, pos[0], kb.CreateOptions{VectorStore: *store, Info: *info, Profile: *profile})
		if err != nil {
			return fmt.Errorf("kb create: %w", err)
		}
		fmt.Fprintf(stdout, "created knowledge base %s (vectors: %s, embedding model: %s)\n", created.Name, created.VectorStore, created.EmbedModel)
		return nil
	}
}

// collectFiles reads the files under paths: a file is named by its base
// name, a folder's supported files by their path relative to the folder.
func collectFiles(paths []string) ([]kb.FileData, []string, error) {
	var files []kb.FileData
	var skipped []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, nil, err
		}
		if !st.IsDir() {
			data, err := os.ReadFile(p)
			if err != nil {
				return nil, nil, err
			}
			files = append(files, kb.FileData{Name: filepath.Base(p), Data: data})
			continue
		}
		err = filepath.WalkDir(p, func(f string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if strings.HasPrefix(d.Name(), ".") && f != p {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if !d.Type().IsRegular() {
				return nil
			}
			rel, err := filepath.Rel(p, f)
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			if !kb.Supported(rel) {
				skipped = append(skipped, rel)
				return nil
			}
			data, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			files = append(files, kb.FileData{Name: rel, Data: data})
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	return files, skipped, nil
}

func kbAdd(fs *flag.FlagSet) kbRun {
	override := fs.Bool("override", true, "replace documents that exist (unchanged ones are skipped)")
	force := fs.Bool("force", false, "re-index documents even when unchanged")
	size := fs.Int("chunk-size", 0, "chunk size (default: kb.chunk_size)")
	overlap := fs.Int("chunk-overlap", 0, "chunk overlap (default: kb.chunk_overlap)")
	zh := fs.Bool("zh-title-enhance", false, "prefix chunks with the title they follow")
	return func(ctx context.Context, svc *kb.Service, pos []string, stdout, stderr io.Writer) error {
		opts := kb.AddOptions{Override: *override, Force: *force}
		opts.ChunkSize, opts.ChunkOverlap = *size, *overlap
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "zh-title-enhance" {
				opts.ZhTitleEnhance = zh
			}
		})
		return addFiles(ctx, svc, pos[0], pos[1:], opts, stdout, stderr)
	}
}

// addFiles adds the files under paths (collectFiles) to the knowledge base
// name, creating it when there is none: progress goes to stderr, the
// outcome to stdout.
func addFiles(ctx context.Context, svc *kb.Service, name string, paths []string, opts kb.AddOptions, stdout, stderr io.Writer) error {
	files, unsupported, err := collectFiles(paths)
	if err != nil {
		return fmt.Errorf("kb add: %w", err)
	}
	for _, f := range unsupported {
		fmt.Fprintf(stderr, "skip %s: unsupported type (supported: %s)\n", f, strings.Join(kb.SupportedExtensions(), " "))
	}
	if len(files) == 0 {
		return errors.New("kb add: no supported files found")
	}
	exists, err := svc.Exists(ctx, name)
	if err != nil {
		return fmt.Errorf("kb add: %w", err)
	}
	if !exists {
		if _, err := svc.Create(ctx, name, kb.CreateOptions{}); err != nil {
			return fmt.Errorf("kb add: %w", err)
		}
		fmt.Fprintf(stderr, "created knowledge base %s\n", name)
	}
	bar := newProgressBar(stderr)
	start := time.Now()
	res, err := svc.AddFiles(ctx, name, files, opts, bar.update)
	bar.finish()
	if err != nil {
		return fmt.Errorf("kb add: %w", err)
	}
	chunks := 0
	for _, c := range bar.chunks {
		chunks += c
	}
	fmt.Fprintf(stdout, "%s: %d added, %d unchanged, %d failed (%d chunks in %s)\n",
		name, len(res.Added), len(res.Skipped), len(res.Failed), chunks, time.Since(start).Round(time.Millisecond))
	failed := make([]string, 0, len(res.Failed))
	for f := range res.Failed {
		failed = append(failed, f)
	}
	sort.Strings(failed)
	for _, f := range failed {
		fmt.Fprintf(stdout, "  failed %s: %v\n", f, res.Failed[f])
	}
	if len(failed) > 0 && len(res.Added)+len(res.Skipped) == 0 {
		return errors.New("kb add: every file failed")
	}
	return nil
}

// progressBar draws ingestion progress on a terminal: one bar over the
// files, with the current file and its embedded chunks. On anything else
// it prints one line per finished file.
type progressBar struct {
	w      io.Writer
	tty    bool
	chunks map[string]int
	last   time.Time
	width  int
}

func newProgressBar(w io.Writer) *progressBar {
	tty := false
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	return &progressBar{w: w, tty: tty, chunks: map[string]int{}, width: 30}
}

func (b *progressBar) update(p kb.Progress) {
	switch p.Stage {
	case kb.StageDone, kb.StageSkipped:
		b.chunks[p.File] = p.Chunks
	}
	if !b.tty {
		switch p.Stage {
		case kb.StageDone:
			fmt.Fprintf(b.w, "[%d/%d] %s: %d chunks\n", p.Index, p.Total, p.File, p.Chunks)
		case kb.StageSkipped:
			fmt.Fprintf(b.w, "[%d/%d] %s: unchanged\n", p.Index, p.Total, p.File)
		case kb.StageFailed:
			fmt.Fprintf(b.w, "[%d/%d] %s: failed: %v\n", p.Index, p.Total, p.File, p.Err)
		}
		return
	}
	if p.Stage == kb.StageEmbed && time.Since(b.last) < 50*time.Millisecond && p.Embedded < p.Chunks {
		return
	}
	b.last = time.Now()
	done := float64(p.Index - 1)
	if p.Stage == kb.StageDone || p.Stage == kb.StageSkipped || p.Stage == kb.StageFailed {
		done = float64(p.Index)
	} else if p.Stage == kb.StageEmbed && p.Chunks > 0 {
		done += float64(p.Embedded) / float64(p.Chunks)
	}
	frac := 0.0
	if p.Total > 0 {
		frac = done / float64(p.Total)
	}
	filled := int(frac * float64(b.width))
	file := p.File
	if r := []rune(file); len(r) > 40 {
		file = "…" + string(r[len(r)-39:])
	}
	detail := ""
	if p.Stage == kb.StageEmbed {
		detail = fmt.Sprintf(" (%d/%d chunks)", p.Embedded, p.Chunks)
	}
	fmt.Fprintf(b.w, "\r\033[K[%s%s] %3.0f%% %d/%d %s%s", strings.Repeat("#", filled), strings.Repeat("-", b.width-filled),
		100*frac, p.Index, p.Total, file, detail)
	if p.Stage == kb.StageFailed {
		fmt.Fprintf(b.w, "\r\033[Kfailed %s: %v\n", p.File, p.Err)
	}
}

func (b *progressBar) finish() {
	if b.tty {
		fmt.Fprint(b.w, "\r\033[K")
	}
}

func kbList(*flag.FlagSet) kbRun {
	return func(ctx context.Context, svc *kb.Service, pos []string, stdout, _ io.Writer) error {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		defer tw.Flush()
		if len(pos) == 0 {
			infos, err := svc.List(ctx)
			if err != nil {
				return fmt.Errorf("kb ls: %w", err)
			}
			fmt.Fprintln(tw, "NAME\tFILES\tCHUNKS\tVECTORS\tEMBED MODEL\tINFO")
			for _, i := range infos {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\n", i.Name, i.Files, i.Chunks, i.VectorStore, i.EmbedModel, i.Info)
			}
			return nil
		}
		files, err := svc.Files(ctx, pos[0])
		if err != nil {
			return fmt.Errorf("kb ls: %w", err)
		}
		fmt.Fprintln(tw, "FILE\tCHUNKS\tSIZE\tUPDATED")
		for _, f := range files {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", f.Name, f.Chunks, f.Size, f.UpdatedAt.Format(time.DateTime))
		}
		return nil
	}
}

func kbRemove(fs *flag.FlagSet) kbRun {
	keep := fs.Bool("keep-original", false, "keep the documents' originals in the content folder")
	return func(ctx context.Context, svc *kb.Service, pos []string, stdout, _ io.Writer) error {
		if len(pos) == 1 {
			if err := svc.Delete(ctx, pos[0]); err != nil {
				return fmt.Errorf("kb rm: %w", err)
			}
			fmt.Fprintf(stdout, "removed knowledge base %s\n", pos[0])
			return nil
		}
		failed, err := svc.DeleteFiles(ctx, pos[0], pos[1:], !*keep)
		if err != nil {
			return fmt.Errorf("kb rm: %w", err)
		}
		for _, f := range pos[1:] {
			if e, ok := failed[f]; ok {
				fmt.Fprintf(stdout, "failed %s: %v\n", f, e)
			} else {
				fmt.Fprintf(stdout, "removed %s\n", f)
			}
		}
		if len(failed) > 0 {
			return fmt.Errorf("kb rm: %d of %d documents not removed", len(failed), len(pos)-1)
		}
		return nil
	}
}

func kbSearch(fs *flag.FlagSet) kbRun {
	k := fs.Int("k", 0, "number of chunks (default: kb.top_k)")
	minRel := fs.Float64("min-relevance", 0, "minimum relevance in [0,1] (default 0: every match)")
	asJSON := fs.Bool("json", false, "print the results as JSON")
	return func(ctx context.Context, svc *kb.Service, pos []string, stdout, _ io.Writer) error {
		res, err := svc.Search(ctx, kb.SearchRequest{
			Query: strings.Join(pos[1:], " "), KnowledgeBases: strings.Split(pos[0], ","), TopK: *k, MinRelevance: *minRel,
		})
		if err != nil {
			return fmt.Errorf("kb search: %w", err)
		}
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(res)
		}
		if len(res) == 0 {
			fmt.Fprintln(stdout, "no match")
		}
		for i, r := range res {
			fmt.Fprintf(stdout, "[%d] %.3f %s/%s #%d\n%s\n\n", i+1, r.Relevance, r.KnowledgeBase, r.File, r.Seq, r.Text)
		}
		return nil
	}
}
