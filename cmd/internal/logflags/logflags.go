// Package logflags builds the zap logger both commands (relay and agent) use,
// from their --log-level and --log-format flags.
package logflags

import (
	"fmt"

	"github.com/spf13/pflag"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Flags are the logging flags of a command.
type Flags struct {
	Level  string
	Format string
}

// Register adds --log-level and --log-format to fs.
func (f *Flags) Register(fs *pflag.FlagSet) {
	fs.StringVar(&f.Level, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&f.Format, "log-format", "console", "log format: console or json")
}

// Logger builds a logger that writes to standard error.
func (f *Flags) Logger() (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(f.Level)
	if err != nil {
		return nil, fmt.Errorf("--log-level must be debug, info, warn or error")
	}
	var cfg zap.Config
	switch f.Format {
	case "json":
		cfg = zap.NewProductionConfig()
	case "console":
		cfg = zap.NewDevelopmentConfig()
		cfg.Development = false
		cfg.DisableStacktrace = true
		cfg.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	default:
		return nil, fmt.Errorf("--log-format must be console or json")
	}
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	cfg.OutputPaths = []string{"stderr"}
	cfg.ErrorOutputPaths = []string{"stderr"}
	return cfg.Build()
}
