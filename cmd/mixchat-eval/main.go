// Command mixchat-eval runs mixchat's benchmarks and its crash, fault and
// load harnesses: retrieval (beir, cmrc), conversation memory (locomo),
// mix_chat latency, and the operations runs (ingest, crash, faults, load). It is
// kept apart from the server binary (cmd/mixchat), whose image it is not
// in: it links test upstreams and runs pg_ctl. `mixchat eval NAME ...` runs
// it when it is installed next to mixchat or on PATH.
//
// Every benchmark builds the app with internal/app, the constructor of
// `mixchat serve`, or runs the mixchat binary itself.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
)

// benchmark is one subcommand: its name, one line saying what it measures,
// and its runner, which parses its own flags (-h prints them).
type benchmark struct {
	name, what string
	run        func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// benchmarks are the subcommands, in the order the usage lists them. A new
// benchmark is one line here.
var benchmarks = []benchmark{
	{"beir", "retrieval on a BEIR data set such as SciFact: nDCG@10, recall@100 (--data FOLDER)", runEvalBEIR},
	{"cmrc", "CMRC 2018: each question finds its paragraph: recall@1, recall@5; --threshold calibrates the relevance threshold (--data FILE)", runEvalCMRC},
	{"qa", "answers a person reads, end to end through knowledge-base chat at the offline defaults: answer_contains_gold, answered, refused (--data FILE, --zhouyi DIR, --absent)", runEvalQA},
	{"locomo", "conversation memory on LoCoMo: evidence recall@k of every memory strategy (--data FILE)", runEvalLoCoMo},
	{"followup", "follow-up questions end to end: two-turn Zhouyi conversations through knowledge-base chat and mix_chat at the offline defaults: standalone_ok, answer_contains_gold, refused (--zhouyi DIR)", runEvalFollowUp},
	{"structure", "numbered and named parts of any Markdown or text corpus, end to end: lookups in every number form, nested, absent, follow-ups, where-from: answer_contains_part, top1_is_part, absent_said (--data DIR)", runEvalStructure},
	{"dstc", "FAQ and review questions in English task dialogues (DSTC11 track 5), one document per place, the last user turn asked with the dialogue as history: gold_knowledge_in_reply, faq_answer_in_reply, entity_top1, refused, quotes_a_question (--data DIR)", runEvalDSTC},
	{"canard", "follow-up rewriting on CANARD: corpus BLEU-4 of the offline rewrite against copying the question (--data FILE)", runEvalCanard},
	{"latency", "mix_chat end to end against a test upstream: fused-reply latency, overhead, requests/s", runEvalLatency},
	{"cost", "model tokens per turn of a ten-turn conversation: /chat/chat vs mix_chat in both fusion modes", runEvalCost},
	{"ingest", "one upload of large files into a fresh knowledge base: seconds, MB/s, peak RSS, disk, bytes a small upload writes, recall (--data FILE)", runEvalIngest},
	{"crash", "SIGKILL the mixchat server during uploads and streamed replies, then check the stores", runEvalCrash},
	{"faults", "upstream failures (LLM errors and timeouts, a stalled search engine, PostgreSQL restarts) and what clients get", runEvalFaults},
	{"load", "many concurrent conversations: throughput, latency, goroutines and heap", runEvalLoad},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mixchat-eval:", err)
		os.Exit(1)
	}
}

// run dispatches a command line: NAME [flags], help [NAME], -h.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		usage(stderr)
		return errors.New("name a benchmark: " + names())
	}
	name, rest := args[0], args[1:]
	switch name {
	case "-h", "-help", "--help":
		usage(stdout)
		return nil
	case "help":
		if len(rest) == 0 {
			usage(stdout)
			return nil
		}
		name, rest = rest[0], []string{"-h"}
	}
	for _, b := range benchmarks {
		if b.name == name {
			return b.run(ctx, rest, stdout, stderr)
		}
	}
	usage(stderr)
	return fmt.Errorf("unknown benchmark %q; available: %s", name, names())
}

func names() string {
	var n []string
	for _, b := range benchmarks {
		n = append(n, b.name)
	}
	return strings.Join(n, ", ")
}

func usage(w io.Writer) {
	fmt.Fprint(w, "mixchat-eval: mixchat's benchmarks and its crash, fault and load harnesses.\n\nUsage:\n  mixchat-eval NAME [flags]     (also: mixchat eval NAME [flags])\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, b := range benchmarks {
		fmt.Fprintf(tw, "  %s\t%s\n", b.name, b.what)
	}
	tw.Flush()
	fmt.Fprint(w, "\nRun \"mixchat-eval NAME -h\" for a benchmark's flags. The data sets are public and not in the\nrepository: --data names them, and a missing one is reported with where to download it.\n")
}
