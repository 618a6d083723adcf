package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/kardianos/service"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"tradebridge/agent"
	"tradebridge/agent/agentlog"
	"tradebridge/agent/diag"
	"tradebridge/agent/supportzip"
	"tradebridge/agent/winsvc"
	"tradebridge/cmd/internal/logflags"
	"tradebridge/internal/lifecycle"
	"tradebridge/trading/bridge/ninjatrader"
)

// eventMessages are the Info lines of other packages that also go to the
// system's log: the service's life is read there.
var eventMessages = []string{"tunnel connected", "agent starting"}

// serviceConfigFile is the config file of `run --service`: --config, else
// AGENT_CONFIG, else the machine's.
func serviceConfigFile(path string, getenv func(string) string) string {
	if path == "" {
		path = getenv("AGENT_CONFIG")
	}
	if path == "" {
		path = winsvc.MachinePaths().ConfigFile
	}
	return path
}

// trustCheck reports (a *winsvc.UntrustedError) when the service may not
// trust the file or folder at path: winsvc.CheckTrusted, or a fake in
// tests.
type trustCheck func(path string) error

// loadServiceConfig is loadConfig for the service: the platform is
// NinjaTrader unless one is chosen (the simulator only when chosen), the
// machine's data folder is the default, and the config file, its folder,
// the data folder, the state file and a configured log folder must pass
// check (owned by SYSTEM or the Administrators and changeable by nobody
// else; root elsewhere), or the service does not trust what they say.
func loadServiceConfig(path string, flags Config, getenv func(string) string, check trustCheck) (Config, error) {
	for _, p := range []string{filepath.Dir(path), path} {
		if err := check(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return Config{}, err
		}
	}
	cfg, err := loadConfigWith(path, flags, getenv, ninjatrader.Kind)
	if err != nil {
		return cfg, err
	}
	cfg.asService, cfg.adminOwned = true, true
	if cfg.DataDir == "" {
		cfg.DataDir = winsvc.MachinePaths().DataDir
	}
	if err := checkServiceConfig(cfg, runtime.GOOS); err != nil {
		return cfg, err
	}
	if err := check(cfg.DataDir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return cfg, fmt.Errorf("the data folder %s does not exist: create it from an elevated prompt "+
				"(the service does not create folders another user could prepare)", cfg.DataDir)
		}
		return cfg, err
	}
	if err := check(stateFile(cfg.DataDir, cfg)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return cfg, err
	}
	if cfg.LogDir != "" {
		if err := check(cfg.LogDir); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

// trustState is what check says of paths, for noticing that a file the
// service refused was repaired.
func trustState(check trustCheck, paths ...string) string {
	var b strings.Builder
	for _, p := range paths {
		if err := check(p); err != nil {
			b.WriteString(err.Error())
		}
		b.WriteByte(0)
	}
	return b.String()
}

// serviceLogDir is where the service logs: the configuration's log
// folder when the config file names one and the file and the folder pass
// check, else the machine's, or none (the system's log only) when that
// one fails the check (ignored says why a folder was not used). It is
// read once, at the service's start.
func serviceLogDir(path string, flags Config, getenv func(string) string, check trustCheck) (dir string, ignored error) {
	dir = flags.LogDir
	if dir == "" {
		dir = getenv("AGENT_LOG_DIR")
	}
	if dir == "" {
		if cfg, err := readConfigFile(path); err == nil && cfg.LogDir != "" {
			for _, p := range []string{filepath.Dir(path), path, cfg.LogDir} {
				if ignored = check(p); ignored != nil {
					break
				}
			}
			if ignored == nil {
				dir = cfg.LogDir
			}
		}
	}
	if dir == "" {
		dir = winsvc.MachinePaths().LogDir
		if err := check(dir); errors.Is(err, winsvc.ErrUntrusted) {
			// Not even the machine's folder is safe (it could not be
			// repaired): no log file, the system's log only.
			return "", err
		}
	}
	return dir, ignored
}

// logTarget says where the service's log goes: the file, else the
// system's log alone.
func logTarget(file string) string {
	if file == "" {
		return "the system's log only"
	}
	return file
}

// runService is `agent run --service`: the supervisor under the service
// manager (the SCM on Windows; signals elsewhere), logging to the rotating
// file and the system's log.
func runService(cfgPath string, flags Config, logs logflags.Flags) error {
	path := serviceConfigFile(cfgPath, os.Getenv)
	// Create the machine's folders, or repair those of an older install
	// (or that a user created before the service did), before reading
	// anything in them.
	foldersErr := winsvc.EnsureMachineFolders()
	prog := &serviceProgram{}
	svc, err := winsvc.New(prog, "")
	if err != nil {
		return err
	}
	level, err := zapcore.ParseLevel(logs.Level)
	if err != nil {
		return errors.New("--log-level must be debug, info, warn or error")
	}
	var cores []zapcore.Core
	if service.Interactive() { // started by hand, e.g. to see why the service fails
		console, err := logs.Logger()
		if err != nil {
			return err
		}
		cores = append(cores, console.Core())
	}
	rec := diag.NewRecorder()
	cores = append(cores, rec.Core())
	logDir, logDirIgnored := serviceLogDir(path, flags, os.Getenv, winsvc.CheckTrusted)
	opts := agentlog.Options{Dir: logDir, Level: level,
		EventMessages: eventMessages, Cores: cores}
	sysLog, sysErr := svc.SystemLogger(nil)
	if sysErr == nil {
		opts.EventLog = sysLog
	}
	logger, logErr := agentlog.New(opts)
	if logErr != nil { // still run, on the system's log alone
		dir := opts.Dir
		opts.Dir = ""
		if logger, err = agentlog.New(opts); err != nil {
			return err
		}
		logger.Logger().Error("the agent cannot write its log file; it logs to the system's log only",
			zap.String("dir", dir), zap.Error(logErr))
	}
	defer logger.Close()
	log := logger.Logger().Named("service")
	if sysErr != nil {
		log.Info("no system log to write to; logging to the file only", zap.Error(sysErr))
	}
	if foldersErr != nil {
		log.Error("the agent cannot secure its machine folders; it does not trust what they hold", zap.Error(foldersErr))
	}
	if logDirIgnored != nil {
		log.Error("a log folder is not safe and not used; the log goes to "+logTarget(logger.File()),
			zap.Error(logDirIgnored))
	}

	sup, err := newSupervisor(supervisorOptions{
		ConfigFile: path,
		Load: func() (Config, error) {
			return loadServiceConfig(path, flags, os.Getenv, winsvc.CheckTrusted)
		},
		Watch: func() string { return trustState(winsvc.CheckTrusted, filepath.Dir(path), path) },
		Run: func(ctx context.Context, cfg Config) error {
			logger.SetSecrets(cfg.Token, cfg.NinjaTrader.Secret, supportzip.ProxyPassword(cfg.Proxy))
			return runAgent(ctx, cfg, logger.Logger(), diagnosticsOf(cfg, path, logger.File(), rec, true))
		},
		Logger: logger.Logger(),
	})
	if err != nil {
		return err
	}
	prog.sup, prog.log = sup, log
	log.Info("service starting", agentlog.Notable(), zap.String("version", agent.Version),
		zap.String("config", path), zap.String("logFile", logger.File()))
	if err := svc.Run(); err != nil {
		log.Error("the service stopped with an error", zap.Error(err))
		return err
	}
	log.Info("service stopped", agentlog.Notable())
	return nil
}

// serviceProgram is what the service manager starts and stops: the
// supervisor, in a goroutine it owns.
type serviceProgram struct {
	sup  *supervisor
	log  *zap.Logger
	done chan struct{}
}

// Start starts the supervisor and returns at once.
func (p *serviceProgram) Start(service.Service) error {
	p.done = make(chan struct{})
	go func() {
		defer close(p.done)
		p.sup.Run(context.Background()) //nolint:errcheck // returns nil
	}()
	return nil
}

// Stop stops the supervisor and its agent and waits for them.
func (p *serviceProgram) Stop(service.Service) error {
	p.log.Info("service stopping", agentlog.Notable())
	p.sup.Close()
	<-p.done
	return nil
}

// supervisorOptions configure a supervisor.
type supervisorOptions struct {
	// ConfigFile is the file watched for changes.
	ConfigFile string
	// Load reads the configuration (the file, with the environment and
	// flags over it).
	Load func() (Config, error)
	// Run runs an agent on cfg until ctx ends.
	Run func(ctx context.Context, cfg Config) error
	// Watch, when set, is more of what the configuration depends on (the
	// file's ownership and permissions): a change of what it returns
	// reloads the configuration as a change of the file does.
	Watch func() string
	// Poll is how often the file is read; default 5 s.
	Poll time.Duration
	// Retry is how long after an agent stopped by itself it is started
	// again; default 30 s.
	Retry  time.Duration
	Logger *zap.Logger
}

// supervisor keeps an agent running on the configuration file's current
// content: it starts one when the configuration is complete and valid,
// waits (saying why once) while it is not, restarts it whenever the
// file's content changes, and starts it again a while after it stopped by
// itself. It never gives up: the service stays up until it is stopped.
type supervisor struct {
	opts supervisorOptions
	log  *zap.Logger
	life lifecycle.Group // Run; stopped by Close
}

func newSupervisor(opts supervisorOptions) (*supervisor, error) {
	if opts.ConfigFile == "" || opts.Load == nil || opts.Run == nil {
		return nil, errors.New("supervisor: ConfigFile, Load and Run are required")
	}
	if opts.Poll <= 0 {
		opts.Poll = 5 * time.Second
	}
	if opts.Retry <= 0 {
		opts.Retry = 30 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	return &supervisor{opts: opts, log: opts.Logger.Named("service")}, nil
}

// child is one running agent.
type child struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error // Run's, once done is closed
}

func (c *child) stop() {
	c.cancel()
	<-c.done
}

// Run supervises until ctx ends or Close is called; it returns nil once
// the agent it ran has stopped.
func (s *supervisor) Run(ctx context.Context) error {
	ctx, leave, ok := s.life.Enter(ctx)
	if !ok {
		return nil
	}
	defer leave()

	var (
		seen    []byte // the file's content (or why it could not be read) last acted on
		first   = true
		cfg     Config
		valid   bool // cfg is the current content's and valid
		current *child
		retryAt time.Time
	)
	defer func() {
		if current != nil {
			current.stop()
		}
	}()
	start := func() {
		c, run := &child{done: make(chan struct{})}, cfg
		var cctx context.Context
		cctx, c.cancel = context.WithCancel(ctx)
		go func() {
			defer close(c.done)
			c.err = s.opts.Run(cctx, run)
		}()
		current = c
	}
	tick := time.NewTicker(s.opts.Poll)
	defer tick.Stop()
	for {
		content := s.read()
		switch {
		case first || !bytes.Equal(content, seen):
			if current != nil {
				s.log.Info("the configuration file changed; restarting the agent", agentlog.Notable())
				current.stop()
				current = nil
			}
			seen, first = content, false
			var err error
			if cfg, err = s.opts.Load(); err != nil {
				valid = false
				s.log.Error("the agent waits for a valid configuration; pair this PC (Start menu \"Pair this PC\", "+
					"or `agent pair CODE --relay URL`) or set it with `agent config set` (relay-url, token, platform) "+
					"in an elevated prompt: it starts within seconds",
					zap.String("file", s.opts.ConfigFile), zap.Error(err))
				break
			}
			valid = true
			start()
		case valid && current == nil && !time.Now().Before(retryAt):
			s.log.Info("starting the agent again")
			start()
		}
		var done chan struct{}
		if current != nil {
			done = current.done
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-done:
			if ctx.Err() != nil {
				return nil
			}
			s.log.Error("the agent stopped; it starts again after a pause",
				zap.Duration("in", s.opts.Retry), zap.Error(current.err))
			current, retryAt = nil, time.Now().Add(s.opts.Retry)
		}
	}
}

// read returns the config file's content, or why it cannot be read.
func (s *supervisor) read() []byte {
	b, err := os.ReadFile(s.opts.ConfigFile)
	if err != nil {
		b = fmt.Appendf(nil, "\x00%v", err)
	}
	if s.opts.Watch != nil {
		b = append(append(b, 0), s.opts.Watch()...)
	}
	return b
}

// Close stops the supervisor and its agent and waits for Run to return.
// It is idempotent.
func (s *supervisor) Close() error {
	s.life.Close()
	return nil
}
