package ati

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"tradebridge/internal/lifecycle"
	"tradebridge/protocol"
	"tradebridge/trading/bridge"
)

// Defaults of Options.
const (
	// DefaultPoll is how often the outgoing folder is read.
	DefaultPoll = 100 * time.Millisecond
	// DefaultWaitTimeout bounds how long a command waits for NinjaTrader
	// to read its file and report the outcome.
	DefaultWaitTimeout = 5 * time.Second
	// DefaultEventBuffer is how many events a reader of Events may fall
	// behind before it is told it lost some.
	DefaultEventBuffer = 1024
)

// Names of the ATI folders under Options.Dir.
const (
	incomingDir = "incoming"
	outgoingDir = "outgoing"
)

// Options configures Files.
type Options struct {
	// Dir is NinjaTrader's user folder, "Documents\NinjaTrader 8", with
	// the ATI's incoming and outgoing folders in it. Required.
	Dir string
	// Logger receives the logs; nil discards them.
	Logger *zap.Logger
	// Now is the clock of order times and file names; nil means time.Now.
	Now func() time.Time
	// Poll is how often the outgoing folder is read; 0 means DefaultPoll.
	Poll time.Duration
	// WaitTimeout bounds how long SubmitOrder, CancelOrder, ChangeOrder,
	// Flatten, CancelAllOrders and FlattenEverything wait for NinjaTrader
	// (the caller's context may end the wait sooner); 0 means
	// DefaultWaitTimeout.
	WaitTimeout time.Duration
	// EventBuffer is the buffer of each Events stream; 0 means
	// DefaultEventBuffer.
	EventBuffer int
}

// Files drives NinjaTrader through the ATI's file interface. Its methods
// are safe for concurrent use.
type Files struct {
	log         *zap.Logger
	now         func() time.Time
	poll        time.Duration
	waitTimeout time.Duration
	eventBuffer int
	incoming    string
	outgoing    string

	// writeData writes an order instruction to its temporary file; tests
	// slow it down to show that NinjaTrader never sees a partial file.
	writeData func(*os.File, []byte) error

	scanMu sync.Mutex
	files  map[string]cachedFile // the outgoing folder at the last scan, by name

	life lifecycle.Group // the poller; stopped by Close

	mu         sync.Mutex
	started    bool
	orders     map[string]*order   // orders placed by this process, by id
	used       map[string]struct{} // order ids used, lower case (file names ignore case on Windows)
	orderSeq   int64
	oifSeq     int64
	outNames   map[string]struct{} // lower-case names in the outgoing folder at the last scan
	positions  map[posKey]posEntry
	conns      map[string]string // connection name → protocol status
	unreadable map[string]stamp  // outgoing files logged as unreadable, by name
	changed    chan struct{}     // closed and replaced when a scan sees a change
	events     *bridge.Feed
}

// order is an order this process placed.
type order struct {
	rec protocol.Order
	seq int64
	// handed: NinjaTrader read the PLACE (its file left the incoming
	// folder, or a state file appeared). Orders and events show only
	// handed orders.
	handed bool
	// seen: a state file was read; version counts the state files read,
	// stamp is the last one's.
	seen    bool
	version int
	stamp   stamp
}

type posKey struct{ account, instrument string }

type posEntry struct {
	pos protocol.Position
	st  stamp
}

// stamp identifies one version of a file.
type stamp struct {
	mod  time.Time
	size int64
}

func (s stamp) equal(o stamp) bool { return s.size == o.size && s.mod.Equal(o.mod) }

// cachedFile is a file of the outgoing folder as last read.
type cachedFile struct {
	st      stamp
	content string
	ok      bool // read whole, unchanged while read
}

// New checks the ATI folders under opts.Dir and returns Files reading them.
// Call Start to follow the outgoing folder in the background (events), and
// Close when done.
func New(opts Options) (*Files, error) {
	if opts.Dir == "" {
		return nil, errors.New("ati: Options.Dir is required")
	}
	if opts.Poll < 0 || opts.WaitTimeout < 0 || opts.EventBuffer < 0 {
		return nil, errors.New("ati: Options.Poll, WaitTimeout and EventBuffer must not be negative")
	}
	f := &Files{
		log:         opts.Logger,
		now:         opts.Now,
		poll:        opts.Poll,
		waitTimeout: opts.WaitTimeout,
		eventBuffer: opts.EventBuffer,
		incoming:    filepath.Join(opts.Dir, incomingDir),
		outgoing:    filepath.Join(opts.Dir, outgoingDir),
		writeData:   writeAll,
		files:       make(map[string]cachedFile),
		orders:      make(map[string]*order),
		used:        make(map[string]struct{}),
		outNames:    make(map[string]struct{}),
		positions:   make(map[posKey]posEntry),
		conns:       make(map[string]string),
		unreadable:  make(map[string]stamp),
		changed:     make(chan struct{}),
	}
	if f.log == nil {
		f.log = zap.NewNop()
	}
	if f.now == nil {
		f.now = time.Now
	}
	if f.poll == 0 {
		f.poll = DefaultPoll
	}
	if f.waitTimeout == 0 {
		f.waitTimeout = DefaultWaitTimeout
	}
	if f.eventBuffer == 0 {
		f.eventBuffer = DefaultEventBuffer
	}
	f.events = bridge.NewFeed(f.eventBuffer)
	for _, dir := range []string{f.incoming, f.outgoing} {
		fi, err := os.Stat(dir)
		if err != nil || !fi.IsDir() {
			f.log.Error("NinjaTrader ATI folder missing", zap.String("path", dir), zap.Error(err))
			return nil, ErrFolder
		}
	}
	if err := f.scan(); err != nil {
		return nil, err
	}
	return f, nil
}

// Start follows the outgoing folder in the background, every Options.Poll,
// so Events reports changes as they happen. Without it the folder is read
// only when a method needs it. Start is idempotent.
func (f *Files) Start() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.life.Stopped() {
		return ErrClosed
	}
	if !f.started {
		if !f.life.Go(f.pollLoop) {
			return ErrClosed
		}
		f.started = true
	}
	return nil
}

// Close stops the poller, waits for it and ends every Events stream. Order
// instructions already handed to NinjaTrader stay handed. Close is
// idempotent.
func (f *Files) Close() error {
	f.mu.Lock()
	if f.life.Stop() {
		f.events.Close()
	}
	f.mu.Unlock()
	f.life.Wait()
	return nil
}

func (f *Files) pollLoop(ctx context.Context) {
	t := time.NewTicker(f.poll)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := f.scan()
		switch {
		case err != nil && !failing:
			failing = true
			f.log.Warn("cannot read NinjaTrader's outgoing folder; retrying")
		case err == nil && failing:
			failing = false
			f.log.Info("NinjaTrader's outgoing folder is readable again")
		}
	}
}

// scan reads the outgoing folder, updates what it tells (order states,
// positions, connections) and publishes the changes. Files not changed
// since the last scan are not read again.
func (f *Files) scan() error {
	f.scanMu.Lock()
	defer f.scanMu.Unlock()
	entries, err := os.ReadDir(f.outgoing)
	if err != nil {
		f.log.Debug("reading the outgoing folder", zap.Error(err))
		return ErrFolder
	}
	next := make(map[string]cachedFile, len(entries))
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !strings.EqualFold(filepath.Ext(name), ".txt") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // gone since the listing
		}
		st := stamp{mod: info.ModTime(), size: info.Size()}
		if old, ok := f.files[name]; ok && old.st.equal(st) {
			next[name] = old
			continue
		}
		if st.size > maxOutgoingFile {
			next[name] = cachedFile{st: st} // not an ATI file
			continue
		}
		if content, ok := readStable(filepath.Join(f.outgoing, name)); ok {
			next[name] = cachedFile{st: st, content: content, ok: true}
		} else if old, ok := f.files[name]; ok {
			// NinjaTrader is writing it: keep what it said before, and
			// read it again at the next scan (the stamps differ).
			next[name] = old
		}
	}
	f.files = next
	f.mu.Lock()
	f.apply(next)
	f.mu.Unlock()
	return nil
}

// readStable reads a file and reports whether what was read is the whole
// file, unchanged while it was read: not a file NinjaTrader was writing
// meanwhile. It compares the file's own metadata before and after the read
// (a directory listing may lag behind it on Windows).
func readStable(path string) (string, bool) {
	before, err := os.Stat(path)
	if err != nil {
		return "", false
	}
	b, err := os.ReadFile(path)
	if err != nil || int64(len(b)) != before.Size() {
		return "", false
	}
	after, err := os.Stat(path)
	if err != nil || after.Size() != before.Size() || !after.ModTime().Equal(before.ModTime()) {
		return "", false
	}
	return string(b), true
}

// apply updates the state from a scan of the outgoing folder and publishes
// what changed, with f.mu held.
func (f *Files) apply(files map[string]cachedFile) {
	now := f.now()
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)

	// An order's state file is "<id>.txt" (help guide) or
	// "<account>_<id>.txt" (NinjaTrader 8 as observed).
	byFile := make(map[string]*order, 2*len(f.orders))
	for _, o := range f.orders {
		byFile[strings.ToLower(o.rec.OrderID)+".txt"] = o
		byFile[strings.ToLower(o.rec.Account+"_"+o.rec.OrderID)+".txt"] = o
	}
	type orderCand struct {
		cf   cachedFile
		name string
	}
	orderFiles := make(map[*order]orderCand)
	positions := make(map[posKey]posEntry)
	conns := make(map[string]string)
	outNames := make(map[string]struct{}, len(files))
	changed := false

	for _, name := range names {
		cf := files[name]
		lower := strings.ToLower(name)
		outNames[lower] = struct{}{}
		if !cf.ok {
			continue
		}
		if o := byFile[lower]; o != nil {
			if c, ok := orderFiles[o]; !ok || cf.st.mod.After(c.cf.st.mod) {
				orderFiles[o] = orderCand{cf: cf, name: name}
			}
			continue
		}
		if isPositionFileName(name) {
			account, instrument, ok := parsePositionName(name, now)
			if !ok {
				f.noteUnreadable(name, cf.st, "position file name not understood")
				continue
			}
			k := posKey{account, instrument}
			mp, qty, avg, ok := parsePositionContent(cf.content)
			if !ok {
				// Most likely read while NinjaTrader rewrote it (empty):
				// the position stays as it was until the next version.
				f.noteUnreadable(name, cf.st, "position file content not understood")
				if old, had := f.positions[k]; had {
					if cur, ok := positions[k]; !ok || old.st.mod.After(cur.st.mod) {
						positions[k] = old
					}
				}
				continue
			}
			if old, ok := positions[k]; ok && !cf.st.mod.After(old.st.mod) {
				continue
			}
			positions[k] = posEntry{st: cf.st, pos: protocol.Position{
				Account:        account,
				Instrument:     instrument,
				InstrumentType: instrumentType,
				MarketPosition: mp,
				Quantity:       qty,
				AveragePrice:   avg,
			}}
			continue
		}
		stem := name[:len(name)-len(".txt")]
		if status, ok := parseConnection(cf.content); ok {
			conns[stem] = status
		} else if status, had := f.conns[stem]; had {
			conns[stem] = status // being rewritten
		}
	}
	f.outNames = outNames
	for name := range f.unreadable {
		if _, ok := files[name]; !ok {
			delete(f.unreadable, name)
		}
	}

	ordersByAge := make([]*order, 0, len(orderFiles))
	for o := range orderFiles {
		ordersByAge = append(ordersByAge, o)
	}
	sort.Slice(ordersByAge, func(i, j int) bool { return ordersByAge[i].seq < ordersByAge[j].seq })
	for _, o := range ordersByAge {
		c := orderFiles[o]
		if o.seen && o.stamp.equal(c.cf.st) {
			continue
		}
		o.stamp = c.cf.st
		st, ok := parseOrderFile(c.cf.content)
		if !ok {
			f.noteUnreadable(c.name, c.cf.st, "order state file content not understood")
			continue
		}
		if st.State == protocol.OrderStateUnknown {
			f.log.Warn("order state file holds a state this agent does not know",
				zap.String("orderId", o.rec.OrderID))
		}
		o.seen, o.handed = true, true
		o.version++
		o.rec.OrderState, o.rec.Filled, o.rec.AverageFillPrice = st.State, st.Filled, st.AvgFill
		f.emitOrder(o)
		changed = true
	}

	for k, e := range positions {
		if old, ok := f.positions[k]; ok && old.pos == e.pos {
			continue
		}
		changed = true
	}
	for k := range f.positions {
		if _, ok := positions[k]; !ok {
			f.log.Debug("position file gone", zap.String("account", k.account), zap.String("instrument", k.instrument))
			changed = true
		}
	}
	if changed {
		keys := make([]posKey, 0, len(positions))
		for k := range positions {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			if keys[i].account != keys[j].account {
				return keys[i].account < keys[j].account
			}
			return keys[i].instrument < keys[j].instrument
		})
		for _, k := range keys {
			if old, ok := f.positions[k]; !ok || old.pos != positions[k].pos {
				f.emitPosition(positions[k].pos)
			}
		}
	}
	f.positions = positions

	for name, status := range conns {
		if f.conns[name] != status {
			f.log.Info("NinjaTrader connection", zap.String("connection", name), zap.String("status", status))
			changed = true
		}
	}
	if len(conns) != len(f.conns) {
		changed = true
	}
	f.conns = conns

	if changed {
		close(f.changed)
		f.changed = make(chan struct{})
	}
}

// noteUnreadable logs, once per version of the file, an outgoing file this
// package cannot read, with f.mu held. NinjaTrader writes files in place,
// so an empty or partial read is expected now and then: the next version
// is read again.
func (f *Files) noteUnreadable(name string, st stamp, why string) {
	if old, ok := f.unreadable[name]; ok && old.equal(st) {
		return
	}
	f.unreadable[name] = st
	f.log.Debug(why, zap.String("file", name))
}

// instrumentType is the type of every instrument this package reports: it
// accepts futures contracts only.
const instrumentType = "Future"

// hand writes one command as an order instruction file and returns the
// file's path. The line goes to a temporary file in the incoming folder,
// whose name NinjaTrader does not read, and is renamed to "oif….txt" once
// complete, so NinjaTrader never reads part of a command.
func (f *Files) hand(c command) (string, error) {
	line, err := c.encode()
	if err != nil {
		return "", err
	}
	f.mu.Lock()
	if f.life.Stopped() {
		f.mu.Unlock()
		return "", ErrClosed
	}
	f.oifSeq++
	seq := f.oifSeq
	f.mu.Unlock()

	var rnd [4]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", fmt.Errorf("ati: random name: %w", err)
	}
	tag := hex.EncodeToString(rnd[:])
	final := filepath.Join(f.incoming, "oiftb_"+strconv.FormatInt(f.now().UnixNano(), 10)+"_"+
		strconv.FormatInt(seq, 10)+"_"+tag+".txt")
	tmp := filepath.Join(f.incoming, ".tb-"+tag+"-"+strconv.FormatInt(seq, 10)+".tmp")
	if err := f.writeTemp(tmp, []byte(line)); err != nil {
		_ = os.Remove(tmp)
		f.log.Error("cannot write an order instruction file", zap.Error(err))
		return "", ErrFolder
	}
	if _, err := os.Lstat(final); !errors.Is(err, fs.ErrNotExist) {
		_ = os.Remove(tmp)
		f.log.Error("order instruction file name taken", zap.Error(err))
		return "", ErrFolder
	}
	if err := os.Rename(tmp, final); err != nil {
		_ = os.Remove(tmp)
		f.log.Error("cannot rename an order instruction file", zap.Error(err))
		return "", ErrFolder
	}
	f.log.Debug("order instruction handed to NinjaTrader", zap.String("command", c.Command),
		zap.String("orderId", c.OrderID), zap.String("file", filepath.Base(final)))
	return final, nil
}

func (f *Files) writeTemp(path string, data []byte) error {
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if err := f.writeData(fh, data); err != nil {
		_ = fh.Close()
		return err
	}
	if err := fh.Sync(); err != nil {
		_ = fh.Close()
		return err
	}
	return fh.Close()
}

func writeAll(fh *os.File, data []byte) error {
	_, err := fh.Write(data)
	return err
}

// waitResult is how a wait for NinjaTrader ended.
type waitResult int

const (
	// waitDone: the outcome the caller waited for was seen.
	waitDone waitResult = iota
	// waitPending: NinjaTrader has the command, but its outcome was not
	// seen in time.
	waitPending
	// waitWithdrawn: NinjaTrader did not read the command in time; its
	// file was deleted unread.
	waitWithdrawn
)

// waiter tells await what to watch. Its functions run with f.mu held.
type waiter struct {
	// done reports the outcome the caller waits for.
	done func() bool
	// evidence reports that NinjaTrader acted on the command (a state
	// file changed), which proves it read it; nil when nothing can.
	evidence func() bool
	// handed runs once, when the command is known to be NinjaTrader's.
	handed func()
}

// await waits, until Options.WaitTimeout, ctx's end or Close, for
// NinjaTrader to read the command in oifPath and for w.done. A command
// still unread at the end, with no evidence that NinjaTrader acted on it,
// is withdrawn: its file is deleted, so a NinjaTrader that starts reading
// the folder later can never act on it.
func (f *Files) await(ctx context.Context, oifPath string, w waiter) waitResult {
	deadline := time.NewTimer(f.waitTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(f.poll)
	defer tick.Stop()
	consumed, handed := false, false
	markHanded := func() {
		if !handed {
			handed = true
			if w.handed != nil {
				w.handed()
			}
		}
	}
	evidence := func() bool { return w.evidence != nil && w.evidence() }
	for {
		if !consumed {
			if _, err := os.Lstat(oifPath); errors.Is(err, fs.ErrNotExist) {
				consumed = true
			}
		}
		if err := f.scan(); err != nil {
			f.log.Debug("scan while waiting", zap.Error(err))
		}
		f.mu.Lock()
		ev := evidence()
		if consumed || ev {
			markHanded()
		}
		fin := (consumed || ev) && w.done()
		changed := f.changed
		f.mu.Unlock()
		if fin {
			return waitDone
		}
		select {
		case <-ctx.Done():
		case <-deadline.C:
		case <-f.life.Done():
		case <-changed:
			continue
		case <-tick.C:
			continue
		}
		break
	}
	f.mu.Lock()
	ev := evidence()
	f.mu.Unlock()
	if !consumed && !ev {
		err := os.Remove(oifPath)
		if err == nil {
			return waitWithdrawn
		}
		// Gone: NinjaTrader took it at the last moment. Held open:
		// NinjaTrader is reading it. Either way it is NinjaTrader's now.
		f.log.Debug("order instruction file not withdrawn", zap.Error(err))
	}
	f.mu.Lock()
	markHanded()
	f.mu.Unlock()
	return waitPending
}

// newOrderID returns an order id not used yet, with f.mu held.
func (f *Files) newOrderID() (string, error) {
	for {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", fmt.Errorf("ati: random order id: %w", err)
		}
		id := "tb" + hex.EncodeToString(b[:])
		if _, ok := f.used[id]; !ok {
			return id, nil
		}
	}
}

// hasStateFile reports whether the outgoing folder held a state file of
// the order id in account at the last scan, with f.mu held.
func (f *Files) hasStateFile(account, id string) bool {
	_, a := f.outNames[strings.ToLower(id)+".txt"]
	_, b := f.outNames[strings.ToLower(account+"_"+id)+".txt"]
	return a || b
}

// Events returns a stream of the changes the outgoing folder shows: order
// events for orders this process placed (their submission, then every
// state file NinjaTrader writes for them) and position events for every
// position file. Seq increases by one per event. A reader that falls
// behind by more than Options.EventBuffer events receives an Event with
// Lost set. The channel is closed when ctx ends or Files closes. Changes
// are seen only when the folder is read: call Start to have it read every
// Options.Poll.
func (f *Files) Events(ctx context.Context) <-chan bridge.Event {
	return f.events.Subscribe(ctx)
}

// emit publishes ev to every reader. It never blocks.
func (f *Files) emit(ev bridge.Event) { f.events.Publish(ev) }

// emitOrder publishes a handed order as it stands, with f.mu held.
func (f *Files) emitOrder(o *order) {
	if !o.handed {
		return
	}
	rec := o.rec
	f.emit(bridge.Event{Kind: bridge.EventOrder, Order: &rec})
}

// emitPosition publishes a position, with f.mu held.
func (f *Files) emitPosition(p protocol.Position) {
	f.emit(bridge.Event{Kind: bridge.EventPosition, Position: &p})
}
