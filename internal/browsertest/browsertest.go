// Package browsertest drives a real, headless browser from tests: Debian's
// chromium (/usr/bin/chromium, or $TB_CHROMIUM), through the DevTools
// protocol with github.com/chromedp/chromedp. It is for the tests that load
// what the relay serves to people (the dashboard under /app) as a trader's
// browser does: the pages' own script runs, their Content-Security-Policy
// holds, and their stream socket is a real one.
//
// New starts one browser, with a fresh profile under t.TempDir(), and
// opens one tab in it at a viewport (Desktop, Phone); the browser is closed
// at t's cleanup and leaves no goroutine behind. A missing chromium skips
// the test, or fails it under CI (testkit.MissingTool), where make test
// installs it (scripts/test-deps.sh).
//
// The Tab's helpers fail the test on an error and bound each step by the
// named waits of internal/testkit. Screenshot writes a PNG into the tab's
// temporary folder and, when the test binary runs with -screenshots DIR,
// into DIR too: that is how the README's screenshots in docs/screenshots
// are made. The tab records the page's uncaught exceptions and console
// errors (a Content-Security-Policy violation among them); Problems
// returns them, and a failed test logs them.
package browsertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"tradebridge/internal/testkit"
)

// screenshots is the -screenshots flag of the test binaries that import
// this package.
var screenshots = flag.String("screenshots", "", "also write the browser tests' screenshots (PNG) into this folder; "+
	"a relative path is taken from the module's root (the folder of go.mod)")

// MaxScreenshot is the size a screenshot's PNG must stay under: they are
// committed (docs/screenshots), so they are kept small.
const MaxScreenshot = 150 << 10

// Flags are the command-line flags chromium runs with here, beside
// --user-data-dir: headless, and nothing that reaches beyond the pages a
// test loads (without them, chromium's own background connections make
// it refuse the tests' ones on machines with no network).
var Flags = []string{
	"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync",
}

// quiet are the flags New adds to Flags: no scroll bars in the
// screenshots, no sound.
var quiet = []string{"--hide-scrollbars", "--mute-audio"}

// Chromium returns the chromium to drive: $TB_CHROMIUM, else Debian's
// /usr/bin/chromium. When there is none it skips t, or fails it under CI.
func Chromium(t testing.TB) string {
	t.Helper()
	path := os.Getenv("TB_CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := exec.LookPath(path); err != nil {
		testkit.MissingTool(t, "%s not found: Debian's chromium runs the browser tests", path)
	}
	return path
}

// Viewport is a tab's size in CSS pixels, at a device scale of 1; Mobile
// emulates a phone (touch, the mobile viewport meta tag honoured).
type Viewport struct {
	Width, Height int64
	Mobile        bool
}

// The viewports of the tests.
var (
	// Desktop is a laptop's window.
	Desktop = Viewport{Width: 1280, Height: 800}
	// Phone is a 375×812 phone held upright.
	Phone = Viewport{Width: 375, Height: 812, Mobile: true}
)

// Tab is a tab of a browser of its own, for one test. Its methods are for
// the test's goroutine only.
type Tab struct {
	t   testing.TB
	ctx context.Context // the tab's chromedp context, with no deadline
	dir string          // where Screenshot writes

	mu       sync.Mutex
	problems []string
}

// New starts a headless chromium for t and opens a tab at vp; both end at
// t's cleanup.
func New(t testing.TB, vp Viewport) *Tab {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a browser; skipped with -short")
	}
	path := Chromium(t)
	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(path), chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(int(vp.Width), int(vp.Height))}
	for _, f := range append(Flags[:len(Flags):len(Flags)], quiet...) {
		opts = append(opts, chromedp.Flag(strings.TrimPrefix(f, "--"), true))
	}
	allocCtx, allocCancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	tab := &Tab{t: t, ctx: ctx, dir: t.TempDir()}

	// The page's problems, read until the tab ends.
	exceptions := chromedp.Events(ctx, runtime.ExceptionThrown)
	entries := chromedp.Events(ctx, cdplog.EntryAdded)
	var readers sync.WaitGroup
	readers.Go(func() {
		for ev, err := range exceptions {
			if err != nil {
				return
			}
			if d := ev.ExceptionDetails; d != nil {
				text := d.Text
				if d.Exception != nil && d.Exception.Description != "" {
					text += " " + d.Exception.Description
				}
				tab.problem("exception: %s (%s:%d)", text, d.URL, d.LineNumber+1)
			}
		}
	})
	readers.Go(func() {
		for ev, err := range entries {
			if err != nil {
				return
			}
			// The browser asks for /favicon.ico by itself: not the page's
			// problem.
			if e := ev.Entry; e != nil && e.Level == cdplog.EntryLevelError && !strings.HasSuffix(e.URL, "/favicon.ico") {
				tab.problem("console %s error: %s (%s)", e.Source, e.Text, e.URL)
			}
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range tab.Problems() {
				t.Logf("the page: %s", p)
			}
		}
		closeCtx, closeCancel := context.WithTimeout(ctx, testkit.Medium)
		if err := chromedp.Cancel(closeCtx); err != nil && !errors.Is(err, context.Canceled) {
			t.Logf("closing chromium: %v", err)
		}
		closeCancel()
		cancel()
		allocCancel() // waits for the browser's process
		readers.Wait()
	})

	// Events above started the browser, with no deadline (which would stop
	// the browser with it); this is the first action on the tab.
	emulate := []chromedp.EmulateViewportOption{chromedp.EmulatePortrait}
	if vp.Width > vp.Height {
		emulate[0] = chromedp.EmulateLandscape
	}
	if vp.Mobile {
		emulate = append(emulate, chromedp.EmulateMobile)
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(vp.Width, vp.Height, emulate...)); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return tab
}

func (tab *Tab) problem(format string, args ...any) {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	tab.problems = append(tab.problems, fmt.Sprintf(format, args...))
}

// Problems returns the page's uncaught exceptions and console errors so
// far (a refused resource, a Content-Security-Policy violation), oldest
// first, for every page the tab loaded.
func (tab *Tab) Problems() []string {
	tab.mu.Lock()
	defer tab.mu.Unlock()
	return append([]string(nil), tab.problems...)
}

// Context returns the tab's chromedp context, for chromedp.Run and
// chromedp.Do with the actions the helpers do not cover. It has no
// deadline: bound a step with context.WithTimeout of it.
func (tab *Tab) Context() context.Context { return tab.ctx }

// Run runs one action on tab within testkit.Long and returns its value; an
// error fails the test.
func Run[T any](tab *Tab, what string, a chromedp.Action[T]) T {
	tab.t.Helper()
	ctx, cancel := context.WithTimeout(tab.ctx, testkit.Long)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		tab.t.Fatalf("%s: %v", what, err)
	}
	return v
}

// Do runs steps on tab, in order, within testkit.Long; an error fails the
// test.
func (tab *Tab) Do(what string, steps ...chromedp.Action[chromedp.Void]) {
	tab.t.Helper()
	Run(tab, what, chromedp.Steps(steps...))
}

// Navigate loads url and waits for its load event.
func (tab *Tab) Navigate(url string) {
	tab.t.Helper()
	tab.Do("loading "+url, chromedp.Navigate(url))
}

// Location returns the URL the tab shows.
func (tab *Tab) Location() string {
	tab.t.Helper()
	return Run(tab, "reading the location", chromedp.Location())
}

// Eval evaluates a JavaScript expression in the page (awaiting a promise)
// and decodes its value into a T.
func Eval[T any](tab *Tab, expr string) T {
	tab.t.Helper()
	return Run(tab, "evaluating "+expr, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
}

// Fill types value into the form input or textarea named name (the first
// one in the page) over what it held, as Type does (a select is Choose's).
func (tab *Tab) Fill(name, value string) {
	tab.t.Helper()
	tab.Type(name, value)
}

// Choose picks the option whose value is value in the select named name
// (the first one in the page), firing its input and change events as a
// person's choice does.
func (tab *Tab) Choose(name, value string) {
	tab.t.Helper()
	css := fmt.Sprintf("select[name=%q]", name)
	sel := chromedp.CSS(css)
	tab.Do("choosing "+value+" in "+name, chromedp.WaitVisible(sel), chromedp.SetValue(sel, value))
	Eval[bool](tab, fmt.Sprintf(`(e => { for (const t of ['input', 'change']) e.dispatchEvent(new Event(t, {bubbles: true})); return true; })(document.querySelector(%s))`, quote(css)))
}

// Text returns the visible text of the first element sel (a CSS selector)
// matches, waiting for one to be there.
func (tab *Tab) Text(sel string) string {
	tab.t.Helper()
	return strings.TrimSpace(Run(tab, "reading the text of "+sel, chromedp.Text(chromedp.CSS(sel))))
}

// Attr returns the attribute name of the first element sel matches, and
// whether it has it, waiting for one to be there.
func (tab *Tab) Attr(sel, name string) (string, bool) {
	tab.t.Helper()
	r := Run(tab, "reading "+name+" of "+sel, chromedp.AttributeValue(chromedp.CSS(sel), name))
	return r.Value, r.Exists
}

// Count returns how many elements sel matches now, without waiting.
func (tab *Tab) Count(sel string) int {
	tab.t.Helper()
	return Eval[int](tab, fmt.Sprintf("document.querySelectorAll(%s).length", quote(sel)))
}

// WaitFor waits, up to within, until the JavaScript expression cond is
// true in the page (it is evaluated again every testkit.Tick, across page
// loads); it fails the test with what otherwise.
func (tab *Tab) WaitFor(within time.Duration, what, cond string) {
	tab.t.Helper()
	deadline := time.Now().Add(within)
	var last error
	for {
		ctx, cancel := context.WithTimeout(tab.ctx, testkit.Medium)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+cond+")"))
		cancel()
		if err == nil && ok {
			return
		}
		if err != nil {
			last = err
		}
		if time.Now().After(deadline) {
			tab.t.Fatalf("waited %v for %s (%s); last error: %v", within, what, cond, last)
		}
		time.Sleep(testkit.Tick)
	}
}

// WaitVisible waits, up to testkit.Long, for an element sel matches to be
// visible.
func (tab *Tab) WaitVisible(sel string) {
	tab.t.Helper()
	tab.Do("waiting for "+sel, chromedp.WaitVisible(chromedp.CSS(sel)))
}

// buttonJS finds, in scope (a CSS selector; the document when empty), the
// first visible button or submit input whose text is text, else the first
// such link; it scrolls it to the middle of the viewport and returns its
// centre, or null when there is none.
const buttonJS = `((scope, text) => {
	const root = scope ? document.querySelector(scope) : document;
	if (!root) return null;
	for (const sel of ['button, input[type=submit]', 'a[href]']) {
		for (const b of root.querySelectorAll(sel)) {
			const label = (b.tagName === 'INPUT' ? b.value : b.innerText).trim();
			if (label !== text || b.offsetParent === null) continue;
			b.scrollIntoView({block: 'center', inline: 'center'});
			const r = b.getBoundingClientRect();
			return [r.x + r.width / 2, r.y + r.height / 2];
		}
	}
	return null;
})(%s, %s)`

// element finds an element as buttonJS does, or by a CSS selector when
// text is empty, waiting up to testkit.Long, and returns its centre in the
// viewport.
func (tab *Tab) element(scope, text string) (x, y float64) {
	tab.t.Helper()
	expr := fmt.Sprintf(buttonJS, quote(scope), quote(text))
	what := fmt.Sprintf("the button %q", text)
	if text == "" {
		expr = fmt.Sprintf(`(sel => { const e = document.querySelector(sel); if (!e) return null;
			e.scrollIntoView({block: 'center', inline: 'center'}); const r = e.getBoundingClientRect();
			return [r.x + r.width / 2, r.y + r.height / 2]; })(%s)`, quote(scope))
		what = scope
	}
	if scope != "" && text != "" {
		what += " in " + scope
	}
	var at []float64
	deadline := time.Now().Add(testkit.Long)
	for {
		ctx, cancel := context.WithTimeout(tab.ctx, testkit.Medium)
		v, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](expr))
		cancel()
		if err == nil && len(v) == 2 {
			at = v
			break
		}
		if time.Now().After(deadline) {
			tab.t.Fatalf("no %s on %s (%v)", what, tab.Location(), err)
		}
		time.Sleep(testkit.Tick)
	}
	return at[0], at[1]
}

// Click clicks, with the mouse, the button (else the link) whose visible
// text is text, within the element scope matches when scope is not empty.
// It does not wait for what follows: see Submit.
func (tab *Tab) Click(scope, text string) {
	tab.t.Helper()
	x, y := tab.element(scope, text)
	tab.Do("clicking "+text, chromedp.MouseClickXY(x, y))
}

// ClickElement clicks, with the mouse, the first element sel matches.
func (tab *Tab) ClickElement(sel string) {
	tab.t.Helper()
	x, y := tab.element(sel, "")
	tab.Do("clicking "+sel, chromedp.MouseClickXY(x, y))
}

// Submit clicks the button (else the link) whose visible text is text,
// within scope, and waits for the page it leads to to load.
func (tab *Tab) Submit(scope, text string) {
	tab.t.Helper()
	x, y := tab.element(scope, text)
	Run(tab, "submitting with "+text, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.MouseClickXY(x, y)))
}

// Tap taps, with a finger (a touch event: on a Phone tab), the first
// element sel matches.
func (tab *Tab) Tap(sel string) {
	tab.t.Helper()
	x, y := tab.element(sel, "")
	tab.Do("tapping "+sel, chromedp.TapXY(x, y))
}

// Hold presses the mouse's button on the element sel matches, holds it for
// d, and lets it go.
func (tab *Tab) Hold(sel string, d time.Duration) {
	tab.t.Helper()
	tab.HoldUntil(sel, d, "", "")
}

// HoldUntil is Hold that, after d, keeps holding until the JavaScript
// expression cond is true (up to testkit.Medium more; it fails the test
// with what otherwise), as a person holds a button until it reacts: on a
// loaded machine the page's own timer may fire after d.
func (tab *Tab) HoldUntil(sel string, d time.Duration, what, cond string) {
	tab.t.Helper()
	x, y := tab.element(sel, "")
	tab.Do("pressing "+sel, chromedp.MouseEvent(chromedp.MousePressed, x, y, chromedp.ButtonLeft, chromedp.ClickCount(1)))
	time.Sleep(d)
	if cond != "" {
		tab.WaitFor(testkit.Medium, what, cond)
	}
	tab.Do("releasing "+sel, chromedp.MouseEvent(chromedp.MouseReleased, x, y, chromedp.ButtonLeft, chromedp.ClickCount(1)))
}

// ScrollWidth returns the document's width in CSS pixels, scrolled parts
// included: wider than the viewport means the page scrolls sideways.
func (tab *Tab) ScrollWidth() int {
	tab.t.Helper()
	return Eval[int](tab, "Math.max(document.documentElement.scrollWidth, document.body ? document.body.scrollWidth : 0)")
}

// Screenshot takes a PNG of the whole page as it stands, re-encoded at
// the best compression, and writes it as name.png into the tab's
// temporary folder and, with -screenshots DIR, into DIR; it returns the
// first path. A PNG over MaxScreenshot fails the test.
func (tab *Tab) Screenshot(name string) string {
	tab.t.Helper()
	return tab.keepScreenshot(name, Run(tab, "taking a screenshot", chromedp.FullScreenshot(100)))
}

// ScreenshotView is Screenshot of the part of the page the viewport
// shows from its top (the page scrolled to the top first): for a page
// too long to show whole.
func (tab *Tab) ScreenshotView(name string) string {
	tab.t.Helper()
	Eval[bool](tab, "(window.scrollTo(0, 0), true)")
	return tab.keepScreenshot(name, Run(tab, "taking a screenshot", chromedp.CaptureScreenshot()))
}

// keepScreenshot re-encodes a screenshot's PNG and writes it (Screenshot).
func (tab *Tab) keepScreenshot(name string, raw []byte) string {
	tab.t.Helper()
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		tab.t.Fatalf("decoding the screenshot: %v", err)
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&buf, img); err != nil {
		tab.t.Fatalf("encoding the screenshot: %v", err)
	}
	if buf.Len() > MaxScreenshot {
		tab.t.Errorf("the screenshot %s is %d KiB, over %d KiB", name, buf.Len()>>10, MaxScreenshot>>10)
	}
	path := filepath.Join(tab.dir, name+".png")
	write(tab.t, path, buf.Bytes())
	tab.t.Logf("screenshot %s: %s", name, path)
	if dir := ScreenshotDir(tab.t); dir != "" {
		write(tab.t, filepath.Join(dir, name+".png"), buf.Bytes())
	}
	return path
}

// ScreenshotOf is Screenshot of the first element sel (a CSS selector)
// matches alone, waiting for it to be visible: a part of a page too long
// for a screenshot of its own.
func (tab *Tab) ScreenshotOf(sel, name string) string {
	tab.t.Helper()
	return tab.keepScreenshot(name, Run(tab, "taking a screenshot of "+sel, chromedp.Screenshot(chromedp.CSS(sel), chromedp.NodeVisible)))
}

// ScreenshotDir returns the folder of -screenshots, absolute, or "" when
// the flag is not set.
func ScreenshotDir(t testing.TB) string {
	t.Helper()
	dir := *screenshots
	if dir == "" || filepath.IsAbs(dir) {
		return dir
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatalf("-screenshots %s: %v", dir, err)
	}
	return filepath.Join(root, dir)
}

// moduleRoot returns the nearest folder at or above the working directory
// (the package's, under go test) that holds a go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

func write(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// quote returns s as a JavaScript string literal.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Type types value into the form field named name (the first input or
// textarea of that name in the page) as a person does: it focuses the
// field, selects what it holds and types over it key by key, so that the
// page's script sees its input events. Unlike Fill it changes no attribute
// of the field and reads none of chromedp's copy of it: Fill's Clear sets
// the value attribute, and chromedp's SendKeys reads the node's attributes
// while its event loop may still be writing that change (a data race in
// chromedp, reported by the race detector).
func (tab *Tab) Type(name, value string) {
	tab.t.Helper()
	sel := fmt.Sprintf("input[name=%q], textarea[name=%q]", name, name)
	tab.WaitFor(testkit.Long, "the field "+name+" to take the focus", fmt.Sprintf(`(sel => {
		const e = document.querySelector(sel);
		if (!e || e.offsetParent === null) return false;
		e.focus(); e.select();
		return document.activeElement === e; })(%s)`, quote(sel)))
	if value == "" {
		value = kb.Backspace
	}
	tab.Do("typing into "+name, chromedp.KeyEvent(value))
}
