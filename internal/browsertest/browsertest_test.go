package browsertest_test

import (
	"bytes"
	"flag"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"tradebridge/internal/browsertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// site serves the pages of these tests: a form that leads to a second
// page, a button that counts how long it was held, a wide page and a
// script that throws.
func site(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	page := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, `<!doctype html><html><head><meta name="viewport" content="width=device-width">
<script src="/page.js" defer></script></head><body>%s</body></html>`, body)
		}
	}
	mux.HandleFunc("GET /{$}", page(`<form action="/next" method="get">
<label>Name <input name="name"></label> <button>Go on</button></form>
<button id="hold" type="button" data-held="0">Hold me</button>
<button id="tap" type="button" data-taps="0">Tap me</button> <a href="/next?name=link">A link</a>
<select name="colour" id="colour" data-changed="no"><option value="">none</option><option value="red">Red</option></select>`))
	mux.HandleFunc("GET /next", func(w http.ResponseWriter, r *http.Request) {
		page(`<p id="greeting" data-name="`+r.URL.Query().Get("name")+`">Hello</p>`)(w, r)
	})
	mux.HandleFunc("GET /wide", page(`<div style="width:900px">wide</div>`))
	mux.HandleFunc("GET /throws", page(`<p>throws</p>`))
	mux.HandleFunc("GET /csp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'self'")
		page(`<script>document.title = 'ran'</script>`)(w, r)
	})
	mux.HandleFunc("GET /page.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		io.WriteString(w, `
const b = document.getElementById('hold');
if (b) {
	let down = 0;
	b.addEventListener('pointerdown', () => { down = performance.now(); });
	b.addEventListener('pointerup', () => { b.dataset.held = String(Math.round(performance.now() - down)); });
}
const tap = document.getElementById('tap');
if (tap) { tap.addEventListener('click', () => { tap.dataset.taps = String(Number(tap.dataset.taps) + 1); }); }
const colour = document.getElementById('colour');
if (colour) { colour.addEventListener('change', () => { colour.dataset.changed = colour.value; }); }
if (location.pathname === '/throws') { throw new Error('thrown on purpose'); }
`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestFormAndButtons(t *testing.T) {
	t.Parallel()
	base := site(t)
	tab := browsertest.New(t, browsertest.Desktop)
	tab.Navigate(base + "/")
	tab.Fill("name", "Ada <b>")
	tab.Submit("form", "Go on")
	require.Equal(t, base+"/next?name=Ada+%3Cb%3E", tab.Location())
	require.Equal(t, "Hello", tab.Text("#greeting"))
	name, ok := tab.Attr("#greeting", "data-name")
	require.True(t, ok)
	require.Equal(t, "Ada <b>", name)
	_, ok = tab.Attr("#greeting", "data-missing")
	require.False(t, ok)
	require.Equal(t, 1, tab.Count("p"))
	require.Equal(t, 0, tab.Count("#hold"))
	require.Empty(t, tab.Problems())

	tab.Navigate(base + "/")
	tab.Hold("#hold", 600*time.Millisecond)
	tab.WaitFor(time.Second, "the hold to be measured", `document.getElementById('hold').dataset.held !== '0'`)
	held := browsertest.Eval[int](tab, `Number(document.getElementById('hold').dataset.held)`)
	require.GreaterOrEqual(t, held, 550, "held for the time asked")
}

// Choose fires the select's change event, as a person's choice does; a
// screenshot of one element is that element's size.
func TestChooseAndScreenshotOf(t *testing.T) {
	t.Parallel()
	base := site(t)
	tab := browsertest.New(t, browsertest.Desktop)
	tab.Navigate(base + "/")
	tab.Choose("colour", "red")
	require.Equal(t, "red", mustAttr(t, tab, "#colour", "data-changed"))

	path := tab.ScreenshotOf("#tap", "tap")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(b))
	require.NoError(t, err)
	w := browsertest.Eval[float64](tab, `document.getElementById('tap').getBoundingClientRect().width`)
	assert.InDelta(t, w, img.Bounds().Dx(), 2, "the element alone")
	assert.Less(t, img.Bounds().Dy(), 100)
}

func TestPhoneViewportAndScreenshot(t *testing.T) {
	t.Parallel()
	base := site(t)
	tab := browsertest.New(t, browsertest.Phone)
	tab.Navigate(base + "/")
	require.Equal(t, 375, browsertest.Eval[int](tab, "window.innerWidth"))
	require.LessOrEqual(t, tab.ScrollWidth(), 375)
	tab.Tap("#tap")
	tab.Tap("#tap")
	tab.WaitFor(time.Second, "two taps", `document.getElementById('tap').dataset.taps === '2'`)
	tab.Click("", "Tap me")
	tab.WaitFor(time.Second, "a click", `document.getElementById('tap').dataset.taps === '3'`)
	tab.Submit("", "A link")
	require.Equal(t, "link", mustAttr(t, tab, "#greeting", "data-name"))
	tab.Navigate(base + "/wide")
	require.Equal(t, 900+8, tab.ScrollWidth(), "the page's width, from its left margin")

	path := tab.Screenshot("wide")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Less(t, len(b), browsertest.MaxScreenshot)
	img, err := png.Decode(bytes.NewReader(b))
	require.NoError(t, err)
	assert.Equal(t, 900+8, img.Bounds().Dx(), "the whole page")
	assert.GreaterOrEqual(t, img.Bounds().Dy(), 812)

	// The viewport alone, from the top of the page.
	browsertest.Eval[bool](tab, "(window.scrollTo(0, 400), true)")
	path = tab.ScreenshotView("wide-view")
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	img, err = png.Decode(bytes.NewReader(b))
	require.NoError(t, err)
	assert.Equal(t, 375, img.Bounds().Dx(), "the viewport's width")
	assert.Equal(t, 812, img.Bounds().Dy(), "the viewport's height")
	require.Zero(t, browsertest.Eval[int](tab, "window.scrollY"), "scrolled to the top")
}

func TestProblemsAreRecorded(t *testing.T) {
	t.Parallel()
	base := site(t)
	tab := browsertest.New(t, browsertest.Desktop)
	tab.Navigate(base + "/throws")
	tab.WaitFor(5*time.Second, "the exception to be recorded", "true")
	require.Eventually(t, func() bool { return len(tab.Problems()) > 0 }, 5*time.Second, 10*time.Millisecond)
	require.Contains(t, tab.Problems()[0], "thrown on purpose")

	// A script the page's Content-Security-Policy refuses is a problem.
	tab.Navigate(base + "/csp")
	require.Eventually(t, func() bool { return len(tab.Problems()) > 1 }, 5*time.Second, 10*time.Millisecond)
	require.Contains(t, tab.Problems()[1], "Content Security Policy")
	require.NotEqual(t, "ran", browsertest.Eval[string](tab, "document.title"), "the inline script did not run")
}

func TestScreenshotsFlagFolder(t *testing.T) {
	// Not parallel: it sets the -screenshots flag.
	base := site(t)
	tab := browsertest.New(t, browsertest.Desktop)
	tab.Navigate(base + "/")
	dir := t.TempDir()
	require.NoError(t, flag.Set("screenshots", dir))
	t.Cleanup(func() { _ = flag.Set("screenshots", "") })
	tab.Screenshot("home")
	_, err := os.Stat(filepath.Join(dir, "home.png"))
	require.NoError(t, err, "-screenshots DIR gets a copy")

	require.NoError(t, flag.Set("screenshots", "docs/shots"))
	wd, err := os.Getwd()
	require.NoError(t, err)
	require.Equal(t, filepath.Join(filepath.Dir(filepath.Dir(wd)), "docs", "shots"), browsertest.ScreenshotDir(t),
		"a relative folder is the module root's")
}

func TestMissingChromium(t *testing.T) {
	// Not parallel: it sets the environment.
	for _, ci := range []string{"", "true"} {
		t.Run("CI="+ci, func(t *testing.T) {
			t.Setenv("TB_CHROMIUM", filepath.Join(t.TempDir(), "no-chromium"))
			t.Setenv("CI", ci)
			var skipped, failed bool
			done := make(chan struct{})
			ft := &fakeT{TB: t, skip: &skipped, fail: &failed}
			go func() {
				defer close(done)
				browsertest.Chromium(ft)
			}()
			<-done
			require.Equal(t, ci == "", skipped, "skipped without CI")
			require.Equal(t, ci != "", failed, "failed under CI")
		})
	}
}

// fakeT records a skip or a failure, and ends its goroutine as testing's
// would.
type fakeT struct {
	testing.TB
	skip, fail *bool
}

func (f *fakeT) Helper() {}

func (f *fakeT) Skip(args ...any) {
	*f.skip = true
	runtime.Goexit()
}

func (f *fakeT) Fatal(args ...any) {
	*f.fail = true
	runtime.Goexit()
}

func mustAttr(t *testing.T, tab *browsertest.Tab, sel, name string) string {
	t.Helper()
	v, ok := tab.Attr(sel, name)
	require.True(t, ok, "%s has no %s", sel, name)
	return v
}

// Type types over what a field holds, as often as it is called, and the
// page's script sees each key's input event; an empty value empties it.
func TestType(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/type.js" {
			w.Header().Set("Content-Type", "text/javascript")
			io.WriteString(w, `const q = document.querySelector('input[name=qty]');
q.addEventListener('input', () => { q.dataset.inputs = String(Number(q.dataset.inputs || 0) + 1); });`)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, `<!doctype html><html><head><script src="/type.js" defer></script></head>
<body><label>Quantity <input name="qty" value="1"></label></body></html>`)
	}))
	t.Cleanup(srv.Close)
	tab := browsertest.New(t, browsertest.Desktop)
	tab.Navigate(srv.URL + "/")
	value := `document.querySelector('input[name=qty]').value`
	tab.Type("qty", "3")
	require.Equal(t, "3", browsertest.Eval[string](tab, value), "typed over the value")
	tab.Type("qty", "25")
	require.Equal(t, "25", browsertest.Eval[string](tab, value), "typed over what was typed")
	require.Equal(t, "3", browsertest.Eval[string](tab, `document.querySelector('input[name=qty]').dataset.inputs`),
		"one input event a key")
	tab.Type("qty", "")
	require.Empty(t, browsertest.Eval[string](tab, value))
	require.Empty(t, tab.Problems())
}
