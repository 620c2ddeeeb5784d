package config

import (
	"flag"
	"os"
)

// Flags are the command-line flags every command that builds the app
// shares: the listen address, the data directory and the configuration
// file. Flags override the file and the environment.
type Flags struct {
	Addr, Data, Config string
}

// Register adds --addr, --data and --config to fs.
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.Addr, "addr", "", "listen address HOST:PORT (default 127.0.0.1:7861; server.addr)")
	fs.StringVar(&f.Data, "data", "", "data directory (default ./data; server.data_dir)")
	fs.StringVar(&f.Config, "config", "", "YAML configuration file (see configs/mixchat.yaml)")
}

// Load builds the validated configuration: defaults, file, environment,
// flags.
func (f *Flags) Load() (Config, error) {
	cfg, err := LoadConfig(f.Config, os.Environ())
	if err != nil {
		return cfg, err
	}
	if f.Addr != "" {
		cfg.Server.Addr = f.Addr
	}
	if f.Data != "" {
		cfg.Server.DataDir = f.Data
	}
	return cfg, cfg.Validate()
}
