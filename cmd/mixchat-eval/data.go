package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// dataset is public evaluation data a benchmark reads from --data. The
// repository ships none of it: each user downloads it from its source.
type dataset struct {
	name    string // as people call it
	layout  string // what --data must name
	license string
	source  string // where to download it
}

// The data sets of the benchmarks that read data.
var (
	scifactData = dataset{
		name:    "BEIR SciFact",
		layout:  "a folder in BEIR layout (corpus.jsonl, queries.jsonl, qrels/test.tsv)",
		license: "CC BY-NC 2.0",
		source:  "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/scifact.zip (allenai/scifact via BEIR; unzip it and pass the scifact folder)",
	}
	cmrcData = dataset{
		name:    "CMRC 2018",
		layout:  "the CMRC 2018 dev file in SQuAD format, cmrc2018_dev.json",
		license: "CC BY-SA 4.0",
		source:  "https://github.com/ymcui/cmrc2018 (squad-style-data/cmrc2018_dev.json)",
	}
	locomoData = dataset{
		name:    "LoCoMo",
		layout:  "the file locomo10.json",
		license: "CC BY-NC 4.0",
		source:  "https://github.com/snap-research/locomo (data/locomo10.json)",
	}
	canardData = dataset{
		name:    "CANARD",
		layout:  "the CANARD dev file, dev.json",
		license: "CC BY-SA 4.0",
		source:  "https://github.com/aagohary/canard (data/release/dev.json)",
	}
)

// where says what the data is and where it comes from.
func (d dataset) where() string {
	return fmt.Sprintf("it names %s of the public %s data set (%s), from %s", d.layout, d.name, d.license, d.source)
}

// required is the error for a missing --data flag.
func (d dataset) required() error {
	return fmt.Errorf("--data is required; %s", d.where())
}

// check fails unless path exists and, below it, every one of files (for a
// folder); the error names what is missing and where the data comes from.
func (d dataset) check(path string, files ...string) error {
	if path == "" {
		return d.required()
	}
	st, err := os.Stat(path)
	if err != nil {
		return d.missing(path, err)
	}
	if len(files) == 0 {
		if st.IsDir() {
			return fmt.Errorf("--data %s is a folder; %s", path, d.where())
		}
		return nil
	}
	if !st.IsDir() {
		return fmt.Errorf("--data %s is not a folder; %s", path, d.where())
	}
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(path, f)); err != nil {
			return d.missing(filepath.Join(path, f), err)
		}
	}
	return nil
}

func (d dataset) missing(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("--data: %s: no such file or directory; %s", path, d.where())
	}
	return fmt.Errorf("--data: %w", err)
}
