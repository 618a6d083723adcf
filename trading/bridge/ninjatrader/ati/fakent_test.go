package ati

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeCadence is how often the fake NinjaTrader looks at the incoming
// folder: often, so that it would catch a file being written in place.
const fakeCadence = 200 * time.Microsecond

// fakeNT plays NinjaTrader's ATI against the folders of a test: it reads
// incoming/oif*.txt files (never other names), checks that each is one
// whole line of 13 fields, acts on it, deletes it, and writes the outgoing
// files as NinjaTrader does (in place, not atomically).
type fakeNT struct {
	in, out string

	// prefixAccount names order state files "<account>_<id>.txt" (as
	// NinjaTrader 8 does) instead of "<id>.txt" (as the help guide says).
	prefixAccount bool

	mu        sync.Mutex
	enabled   bool // reads the incoming folder (the ATI is enabled)
	silent    bool // reads and deletes files but writes nothing
	accounts  map[string]bool
	prices    map[string]float64
	orders    map[string]*fakeOrder
	positions map[posKey]*fakePos
	problems  []string   // files seen incomplete or malformed
	lines     [][]string // every line read, as fields
	files     int        // oif files read

	stop chan struct{}
	wg   sync.WaitGroup
}

type fakeOrder struct {
	id, account, instrument, action, typ string
	qty, filled                          int
	limit, stop, avg                     float64
	state                                string
}

type fakePos struct {
	qty int // signed: long > 0
	avg float64
}

func newFakeNT(t *testing.T, dir string, prefixAccount bool) *fakeNT {
	t.Helper()
	n := &fakeNT{
		in:            filepath.Join(dir, incomingDir),
		out:           filepath.Join(dir, outgoingDir),
		prefixAccount: prefixAccount,
		enabled:       true,
		accounts:      map[string]bool{"Sim101": true, "Sim102": true},
		prices:        map[string]float64{"ES 12-26": 5950.25, "MES 12-26": 5950.25, "M6E 12-26": 1.0825},
		orders:        make(map[string]*fakeOrder),
		positions:     make(map[posKey]*fakePos),
		stop:          make(chan struct{}),
	}
	n.write("Simulated Data Feed.txt", "CONNECTED")
	n.wg.Add(1)
	go n.run()
	t.Cleanup(n.close)
	return n
}

func (n *fakeNT) close() {
	select {
	case <-n.stop:
	default:
		close(n.stop)
	}
	n.wg.Wait()
}

func (n *fakeNT) run() {
	defer n.wg.Done()
	t := time.NewTicker(fakeCadence)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
		n.step()
	}
}

// step reads every oif*.txt file of the incoming folder once.
func (n *fakeNT) step() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.enabled {
		return
	}
	entries, err := os.ReadDir(n.in)
	if err != nil {
		n.problems = append(n.problems, "incoming folder: "+err.Error())
		return
	}
	for _, e := range entries {
		name := e.Name()
		lower := strings.ToLower(name)
		if !strings.HasPrefix(lower, "oif") || !strings.HasSuffix(lower, ".txt") {
			continue // NinjaTrader reads oif*.txt only
		}
		path := filepath.Join(n.in, name)
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		n.files++
		content := string(b)
		if !strings.HasSuffix(content, oifLineEnd) || strings.Count(content, "\n") != 1 {
			n.problems = append(n.problems, "incomplete file "+name+": "+strconv.Quote(content))
			_ = os.Remove(path)
			continue
		}
		fields := strings.Split(strings.TrimSuffix(content, oifLineEnd), ";")
		if len(fields) != oifFields {
			n.problems = append(n.problems, "malformed line in "+name+": "+strconv.Quote(content))
			_ = os.Remove(path)
			continue
		}
		n.lines = append(n.lines, fields)
		if !n.silent {
			n.exec(fields)
		}
		_ = os.Remove(path)
	}
}

// exec acts on one line, with n.mu held.
func (n *fakeNT) exec(f []string) {
	switch f[0] {
	case "PLACE":
		n.place(f)
	case "CANCEL":
		if o := n.orders[f[10]]; o != nil && !fakeTerminal(o.state) {
			n.setState(o, "CANCELLED")
		}
	case "CHANGE":
		o := n.orders[f[10]]
		if o == nil || fakeTerminal(o.state) {
			return
		}
		if q, _ := strconv.Atoi(f[4]); q > 0 {
			o.qty = q
		}
		if p, _ := strconv.ParseFloat(f[6], 64); p > 0 {
			o.limit = p
		}
		if p, _ := strconv.ParseFloat(f[7], 64); p > 0 {
			o.stop = p
		}
		n.setState(o, "CHANGEPENDING")
		n.setState(o, n.restingState(o))
		n.match(o)
	case "CLOSEPOSITION":
		n.closePosition(f[1], f[2])
	case "CANCELALLORDERS":
		for _, o := range n.sortedOrders() {
			if !fakeTerminal(o.state) {
				n.setState(o, "CANCELLED")
			}
		}
	case "FLATTENEVERYTHING":
		for _, o := range n.sortedOrders() {
			if !fakeTerminal(o.state) {
				n.setState(o, "CANCELLED")
			}
		}
		for k := range n.positions {
			n.closePosition(k.account, k.instrument)
		}
	}
}

func (n *fakeNT) place(f []string) {
	id := f[10]
	qty, err := strconv.Atoi(f[4])
	_, known := n.prices[f[2]]
	valid := err == nil && qty > 0 && n.accounts[f[1]] && known &&
		(f[3] == "BUY" || f[3] == "SELL") && (f[8] == "DAY" || f[8] == "GTC") && n.orders[id] == nil
	o := &fakeOrder{id: id, account: f[1], instrument: f[2], action: f[3], typ: f[5], qty: qty}
	switch f[5] {
	case "MARKET":
	case "LIMIT":
		o.limit, err = strconv.ParseFloat(f[6], 64)
		valid = valid && err == nil && f[7] == ""
	case "STOPMARKET":
		o.stop, err = strconv.ParseFloat(f[7], 64)
		valid = valid && err == nil && f[6] == ""
	case "STOPLIMIT":
		var err2 error
		o.limit, err = strconv.ParseFloat(f[6], 64)
		o.stop, err2 = strconv.ParseFloat(f[7], 64)
		valid = valid && err == nil && err2 == nil
	default:
		valid = false
	}
	if id == "" {
		return // NinjaTrader writes no state for orders without an id
	}
	if !valid {
		n.writeOrder(o, "REJECTED")
		return
	}
	n.orders[id] = o
	n.setState(o, "SUBMITTED")
	n.setState(o, n.restingState(o))
	n.match(o)
}

func (n *fakeNT) restingState(o *fakeOrder) string {
	if o.typ == "STOPMARKET" || o.typ == "STOPLIMIT" {
		return "ACCEPTED"
	}
	return "WORKING"
}

// match fills o if the market reaches it, with n.mu held.
func (n *fakeNT) match(o *fakeOrder) {
	if fakeTerminal(o.state) {
		return
	}
	p := n.prices[o.instrument]
	buy := o.action == "BUY"
	reached := func(level float64) bool { return buy && p <= level || !buy && p >= level }
	through := func(level float64) bool { return buy && p >= level || !buy && p <= level }
	switch o.typ {
	case "MARKET":
	case "LIMIT":
		if !reached(o.limit) {
			return
		}
	case "STOPMARKET":
		if !through(o.stop) {
			return
		}
	case "STOPLIMIT":
		if !through(o.stop) || !reached(o.limit) {
			return
		}
	}
	n.fill(o, o.qty-o.filled, p)
}

func (n *fakeNT) fill(o *fakeOrder, qty int, price float64) {
	o.avg = (o.avg*float64(o.filled) + price*float64(qty)) / float64(o.filled+qty)
	o.filled += qty
	n.setState(o, "FILLED")
	signed := qty
	if o.action == "SELL" {
		signed = -qty
	}
	n.movePosition(o.account, o.instrument, signed, price)
}

func (n *fakeNT) movePosition(account, instrument string, signed int, price float64) {
	k := posKey{account, instrument}
	p := n.positions[k]
	if p == nil {
		p = &fakePos{}
		n.positions[k] = p
	}
	switch next := p.qty + signed; {
	case p.qty == 0 || (p.qty > 0) == (signed > 0):
		p.avg = (p.avg*float64(abs(p.qty)) + price*float64(abs(signed))) / float64(abs(next))
		p.qty = next
	case next == 0:
		p.qty, p.avg = 0, 0
	case (next > 0) != (p.qty > 0):
		p.qty, p.avg = next, price
	default:
		p.qty = next
	}
	n.writePosition(k, p)
}

func (n *fakeNT) closePosition(account, instrument string) {
	for _, o := range n.sortedOrders() {
		if o.account == account && o.instrument == instrument && !fakeTerminal(o.state) {
			n.setState(o, "CANCELLED")
		}
	}
	k := posKey{account, instrument}
	if p := n.positions[k]; p != nil && p.qty != 0 {
		n.movePosition(account, instrument, -p.qty, n.prices[instrument])
	}
}

func (n *fakeNT) setState(o *fakeOrder, state string) {
	o.state = state
	n.writeOrder(o, state)
}

func (n *fakeNT) writeOrder(o *fakeOrder, state string) {
	name := o.id + ".txt"
	if n.prefixAccount {
		name = o.account + "_" + name
	}
	n.write(name, state+";"+strconv.Itoa(o.filled)+";"+strconv.FormatFloat(o.avg, 'f', -1, 64))
}

func (n *fakeNT) writePosition(k posKey, p *fakePos) {
	content := "FLAT;0;0"
	switch {
	case p.qty > 0:
		content = "LONG;" + strconv.Itoa(p.qty) + ";" + strconv.FormatFloat(p.avg, 'f', -1, 64)
	case p.qty < 0:
		content = "SHORT;" + strconv.Itoa(-p.qty) + ";" + strconv.FormatFloat(p.avg, 'f', -1, 64)
	}
	n.write(k.instrument+" Globex_"+k.account+"_position.txt", content)
}

// write writes an outgoing file in place, as NinjaTrader does: a reader
// may see it empty.
func (n *fakeNT) write(name, content string) {
	if err := os.WriteFile(filepath.Join(n.out, name), []byte(content), 0o644); err != nil {
		n.problems = append(n.problems, "outgoing write: "+err.Error())
	}
}

func (n *fakeNT) sortedOrders() []*fakeOrder {
	list := make([]*fakeOrder, 0, len(n.orders))
	for _, o := range n.orders {
		list = append(list, o)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].id < list[j].id })
	return list
}

// setPrice moves the market of instrument and fills the orders it reaches.
func (n *fakeNT) setPrice(instrument string, p float64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.prices[instrument] = p
	for _, o := range n.sortedOrders() {
		if o.instrument == instrument {
			n.match(o)
		}
	}
}

func (n *fakeNT) setEnabled(v bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.enabled = v
}

func (n *fakeNT) setSilent(v bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.silent = v
}

// readLines returns the lines read so far.
func (n *fakeNT) readLines() [][]string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([][]string(nil), n.lines...)
}

func (n *fakeNT) fileCount() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.files
}

// takeProblems returns the problems recorded so far and clears them.
func (n *fakeNT) takeProblems() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	p := n.problems
	n.problems = nil
	return p
}

func fakeTerminal(state string) bool {
	return state == "FILLED" || state == "CANCELLED" || state == "REJECTED"
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// requireNoProblems fails the test if the fake saw a partial or malformed
// file.
func requireNoProblems(t *testing.T, n *fakeNT) {
	t.Helper()
	require.Empty(t, n.takeProblems(), "the fake NinjaTrader saw incomplete or malformed files")
}
