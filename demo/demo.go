// Package demo is mixchat's first run: the public-domain Zhouyi (周易) texts
// the binary ships, made into a knowledge base and into pages for the
// offline search engine, so a fresh installation answers 乾卦的卦辞是什么？
// from all three answerers with no setup and no network.
//
// Bootstrap runs once per data directory. On the first start it creates
// and indexes the "zhouyi" knowledge base when the server has no knowledge
// base yet, writes the Ten Wings (十翼) as Markdown pages into the local
// search engine's folder when that folder is absent or empty, and leaves a
// marker file in the data directory. A data directory that already holds a
// knowledge base or search pages keeps them untouched, and once the marker
// exists nothing is created again, even if the user deleted the demo. A
// start with demo: false leaves the marker too (Decline), so the demo is
// not made by a later start either.
//
// The texts and their sources are described in zhouyi/README.md.
package demo

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mixchat/mixchat/pkg/kb"
)

// KnowledgeBase is the name of the demo knowledge base.
const KnowledgeBase = "zhouyi"

// MarkerFile is the file, in the data directory, that records that the
// first run happened and what it created.
const MarkerFile = ".mixchat-demo.json"

// SearchFolder is the subfolder of the search folder the Ten Wings pages
// are written to.
const SearchFolder = "十翼"

//go:embed zhouyi/zhouyi-traditional.txt zhouyi/yizhuan-simplified/*.txt
var texts embed.FS

// KnowledgeBases is what Bootstrap needs of the knowledge bases
// (*kb.Service is one): their names, and creating and filling one.
type KnowledgeBases interface {
	// Names lists the existing knowledge bases.
	Names(ctx context.Context) ([]string, error)
	Create(ctx context.Context, name string, opts kb.CreateOptions) (kb.Info, error)
	AddFiles(ctx context.Context, name string, files []kb.FileData, opts kb.AddOptions, progress func(kb.Progress)) (kb.AddResult, error)
}

// Options say where Bootstrap writes.
type Options struct {
	// DataDir holds the marker file (server.data_dir).
	DataDir string
	// SearchDir is the local search engine's folder (search.local.dir);
	// "" leaves search alone.
	SearchDir string
}

// Result is what the demo provides after Bootstrap.
type Result struct {
	// KnowledgeBase is the demo knowledge base when it exists and the demo
	// created it (now or on an earlier start), "" otherwise: the one to use
	// as the default when the configuration names none.
	KnowledgeBase string
	// CreatedKB and Pages say what this call created: the knowledge base,
	// and how many search pages it wrote.
	CreatedKB bool
	Pages     int
}

// marker is the marker file's content: what the first run created.
type marker struct {
	KnowledgeBase string `json:"knowledge_base,omitempty"`
	SearchPages   int    `json:"search_pages,omitempty"`
	// Declined says a start with demo: false came first: nothing was made.
	Declined bool      `json:"declined,omitempty"`
	Created  time.Time `json:"created"`
}

// Bootstrap makes the demo on the first start of a data directory (see the
// package comment) and reports what the demo provides. On later starts it
// only reads the marker and checks that the knowledge base still exists.
func Bootstrap(ctx context.Context, kbs KnowledgeBases, opts Options) (Result, error) {
	made, done, err := Marker(opts.DataDir)
	if err != nil {
		return Result{}, err
	}
	names, err := kbs.Names(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("demo: list knowledge bases: %w", err)
	}
	if done {
		var res Result
		if made != "" && slices.Contains(names, made) {
			res.KnowledgeBase = made
		}
		return res, nil
	}

	var res Result
	if len(names) == 0 {
		created, err := createKB(ctx, kbs)
		if err != nil {
			return Result{}, err
		}
		res.KnowledgeBase, res.CreatedKB = KnowledgeBase, created
	}
	if opts.SearchDir != "" {
		empty, err := emptyDir(opts.SearchDir)
		if err != nil {
			return Result{}, fmt.Errorf("demo: search folder: %w", err)
		}
		if empty {
			n, err := WritePages(filepath.Join(opts.SearchDir, SearchFolder))
			if err != nil {
				return Result{}, err
			}
			res.Pages = n
		}
	}
	if err := writeMarker(opts.DataDir, marker{KnowledgeBase: res.KnowledgeBase, SearchPages: res.Pages, Created: time.Now().UTC()}); err != nil {
		return Result{}, err
	}
	return res, nil
}

// writeMarker writes m as the marker file of dataDir (created if missing).
func writeMarker(dataDir string, m marker) error {
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dataDir, MarkerFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("demo: write marker: %w", err)
	}
	return nil
}

// Marker reads the marker file in dataDir without touching the knowledge
// bases: done reports whether the first run happened there, and
// knowledgeBase names the knowledge base it created ("" for none), which
// may have been deleted since.
func Marker(dataDir string) (knowledgeBase string, done bool, err error) {
	mpath := filepath.Join(dataDir, MarkerFile)
	b, err := os.ReadFile(mpath)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("demo: %w", err)
	}
	var m marker
	if err := json.Unmarshal(b, &m); err != nil {
		return "", false, fmt.Errorf("demo: read %s: %w", mpath, err)
	}
	return m.KnowledgeBase, true, nil
}

// createKB creates the demo knowledge base and indexes the texts. When
// the knowledge base appeared meanwhile (another replica sharing the
// knowledge-base store started at the same time and made it) it reports
// false and leaves it to that one.
func createKB(ctx context.Context, kbs KnowledgeBases) (bool, error) {
	info := "周易（经与十翼），公有领域文本 / The Zhouyi (I Ching) with the Ten Wings, public domain"
	prof, err := StructureProfile()
	if err != nil {
		return false, err
	}
	if _, err := kbs.Create(ctx, KnowledgeBase, kb.CreateOptions{Info: info, Profile: prof.Name}); err != nil {
		if names, nerr := kbs.Names(ctx); nerr == nil && slices.Contains(names, KnowledgeBase) {
			return false, nil
		}
		return false, fmt.Errorf("demo: create knowledge base %s: %w", KnowledgeBase, err)
	}
	files, err := Files()
	if err != nil {
		return false, err
	}
	res, err := kbs.AddFiles(ctx, KnowledgeBase, files, kb.AddOptions{}, nil)
	if err != nil {
		return false, fmt.Errorf("demo: index knowledge base %s: %w", KnowledgeBase, err)
	}
	for name, ferr := range res.Failed {
		return false, fmt.Errorf("demo: index %s: %w", name, ferr)
	}
	return true, nil
}

// Files returns the demo knowledge base's documents: the traditional
// Zhouyi text and the simplified Ten Wings sections, named by their paths
// below zhouyi/.
func Files() ([]kb.FileData, error) {
	var files []kb.FileData
	err := fs.WalkDir(texts, "zhouyi", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := texts.ReadFile(p)
		if err != nil {
			return err
		}
		files = append(files, kb.FileData{Name: path.Base(p), Data: b})
		if path.Dir(p) != "zhouyi" {
			files[len(files)-1].Name = path.Join(path.Base(path.Dir(p)), path.Base(p))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("demo: read texts: %w", err)
	}
	trad, err := texts.ReadFile("zhouyi/zhouyi-traditional.txt")
	if err != nil {
		return nil, fmt.Errorf("demo: read texts: %w", err)
	}
	judgements, err := Judgements(trad)
	if err != nil {
		return nil, err
	}
	return append(files, kb.FileData{Name: "六十四卦卦辞.md", Data: judgements}), nil
}

// Judgements returns a Markdown index of the 64 hexagrams' judgements
// (卦辞) drawn from the traditional text, whose hexagram sections name no
// 卦辞: one section per hexagram, "## 第一卦 乾" then "乾卦的卦辞是：乾，元亨，
// 利貞。", so that questions about a hexagram's judgement find it by those
// words and an extractive model can quote it.
func Judgements(traditional []byte) ([]byte, error) {
	lines := strings.Split(strings.ReplaceAll(string(traditional), "\r\n", "\n"), "\n")
	var b strings.Builder
	b.WriteString("# 六十四卦卦辞\n\n《周易》六十四卦的卦辞，按通行本卦序，摘自 zhouyi-traditional.txt。\n")
	n := 0
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(strings.TrimSpace(lines[i]), "《易經》第") {
			continue
		}
		if n >= len(hexagrams) {
			return nil, fmt.Errorf("demo: more than %d hexagrams in the traditional text", len(hexagrams))
		}
		j := i + 1
		for j < len(lines) && strings.TrimSpace(lines[j]) == "" {
			j++
		}
		if j == len(lines) {
			break
		}
		name := hexagrams[n]
		fmt.Fprintf(&b, "\n## 第%s卦 %s\n\n%s卦的卦辞是：%s\n", numeral(n+1), name, name, strings.TrimSpace(lines[j]))
		n++
		i = j
	}
	if n != len(hexagrams) {
		return nil, fmt.Errorf("demo: found %d hexagrams in the traditional text, want %d", n, len(hexagrams))
	}
	return []byte(b.String()), nil
}

// emptyDir reports whether dir is missing or holds nothing but hidden
// files.
func emptyDir(dir string) (bool, error) {
	es, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	for _, e := range es {
		if e.Name()[0] != '.' {
			return false, nil
		}
	}
	return true, nil
}
