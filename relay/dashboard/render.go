package dashboard

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"time"

	"go.uber.org/zap"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets/*
var assetFS embed.FS

// pageNames are the templates of whole pages; each defines "content"
// (and "title"), shown inside layout.html.
var pageNames = []string{"home", "signin", "signup", "signup-closed", "reset", "reset-sent", "new-password", "pair",
	"tokens", "activity", "error",
	// The broker link.
	"broker",
	// The Management API's editors.
	"manage-form", "manage-index",
	// The TradingView page.
	"webhook",
}

// asset is an embedded file served under /app/assets/, versioned by its
// content's hash.
type asset struct {
	body  []byte
	ctype string
	// url is its path with ?v= and the first 12 hex digits of its SHA-256.
	url string
}

// pages are the parsed templates and the assets.
type pages struct {
	byName map[string]*template.Template
	status *template.Template // the home page's status section alone
	assets map[string]*asset
}

// loadPages parses the embedded templates and hashes the assets.
func loadPages() (*pages, error) {
	p := &pages{byName: map[string]*template.Template{}, assets: map[string]*asset{}}
	ents, err := fs.ReadDir(assetFS, "assets")
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		b, err := assetFS.ReadFile("assets/" + e.Name())
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(b)
		ctype := "application/octet-stream"
		switch path.Ext(e.Name()) {
		case ".js":
			ctype = "text/javascript; charset=utf-8"
		case ".css":
			ctype = "text/css; charset=utf-8"
		case ".svg":
			ctype = "image/svg+xml"
		}
		p.assets[e.Name()] = &asset{body: b, ctype: ctype, url: "/app/assets/" + e.Name() + "?v=" + hex.EncodeToString(sum[:6])}
	}
	funcs := template.FuncMap{
		"asset": func(name string) string {
			if a := p.assets[name]; a != nil {
				return a.url
			}
			return ""
		},
		"when":     when,
		"platform": platformName,
		"money":    money,
	}
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/status.html")
	if err != nil {
		return nil, fmt.Errorf("dashboard: templates: %w", err)
	}
	for _, name := range pageNames {
		t, err := template.Must(base.Clone()).ParseFS(templateFS, "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("dashboard: template %s: %w", name, err)
		}
		p.byName[name] = t
	}
	p.status = base.Lookup("status")
	return p, nil
}

// when formats a time for the pages: UTC to the second; "—" for none.
func when(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// money formats an amount with two decimals and a sign for losses.
func money(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	if s == "-0.00" {
		s = "0.00"
	}
	return s
}

// view is what every page's template gets.
type view struct {
	Title string
	// Nav names the page in the navigation ("home", "pair", "tokens",
	// "activity", "broker"); "" for the pages without a session.
	Nav string
	// SignedIn shows the navigation, the kill switch and the CSRF token.
	SignedIn bool
	CSRF     string
	// Kill is the kill switch's state: "on" or "off".
	Kill string
	// Error is a form's refusal, shown in #form-error.
	Error string
	// Signup shows the sign-up link on the sign-in page.
	Signup bool
	// Data is the page's own.
	Data any
}

// render writes a page.
func (s *Server) render(w http.ResponseWriter, status int, name string, v *view) {
	t := s.pages.byName[name]
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout.html", v); err != nil {
		s.log.Error("rendering a page", zap.String("page", name), zap.Error(err))
		http.Error(w, "the page could not be shown", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// renderError shows a page that says what went wrong, signed in or not.
func (s *Server) renderError(w http.ResponseWriter, r *http.Request, sess *session, status int, message string) {
	v := &view{Title: http.StatusText(status), Error: message}
	if sess != nil {
		s.signedView(r, sess, v)
	}
	s.render(w, status, "error", v)
}

// asset serves GET /app/assets/{name}: immutable, as its URL carries its
// content's hash.
func (s *Server) asset(w http.ResponseWriter, r *http.Request) {
	setHeaders(w)
	a := s.pages.assets[r.PathValue("name")]
	if a == nil {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", a.ctype)
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	_, _ = w.Write(a.body)
}
