package view

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/trajlab/traj/trace/store/location"
	"github.com/trajlab/traj/trace/store/ref"
)

//go:embed assets
var assets embed.FS

// Options configure a Server.
type Options struct {
	// StoreURL is the store to view (location.Choose applies defaults).
	StoreURL string
	// CacheDir holds downloads from remote stores, cached part indexes and
	// history clones (default: the user cache folder, traj/view).
	CacheDir string
	// Store is passed to location.Open and ref.Resolve (tests inject S3
	// credentials).
	Store location.Options
	// Token is the secret a browser must present once (?token=…) to get
	// its session cookie; empty makes a random one.
	Token  string
	Logger *slog.Logger
	// SummaryWait is how long the store page waits for trajectories being
	// indexed before listing them as pending (default 2 s).
	SummaryWait time.Duration
	// Poll is how often a trajectory's trace is looked at again, at most
	// (0: 500 ms for local stores, 5 s for remote ones; negative: on
	// every request).
	Poll time.Duration
}

// Server serves the viewer of one store.
type Server struct {
	// ctx bounds background work (indexing for the store page).
	ctx         context.Context
	summaryWait time.Duration
	indexing    chan struct{}
	cat         *catalog
	token       string
	logger      *slog.Logger
	handler     http.Handler
	experiments experimentCache
}

// cookieName holds the session secret in the browser.
const cookieName = "traj_view"

// New opens the store and prepares the handlers. It does not listen.
func New(ctx context.Context, opts Options) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	lopts := opts.Store
	lopts.MustExist = true
	if lopts.Logger == nil {
		lopts.Logger = opts.Logger
	}
	st, err := location.Open(ctx, opts.StoreURL, lopts)
	if err != nil {
		return nil, err
	}
	if opts.SummaryWait <= 0 {
		opts.SummaryWait = 2 * time.Second
	}
	if opts.Token == "" {
		b := make([]byte, 24)
		if _, err := rand.Read(b); err != nil {
			return nil, fmt.Errorf("make session secret: %w", err)
		}
		opts.Token = hex.EncodeToString(b)
	}
	remoteEvery := 5 * time.Second
	switch {
	case opts.Poll == 0:
		opts.Poll = 500 * time.Millisecond
	case opts.Poll < 0:
		opts.Poll, remoteEvery = 0, 0
	}
	cat := &catalog{storeURL: opts.StoreURL, st: st, cacheDir: opts.CacheDir, logger: opts.Logger,
		refOpts:    ref.Options{Store: opts.Store, CacheDir: downloadDir(opts.CacheDir)},
		localEvery: opts.Poll, remoteEvery: remoteEvery, trajs: map[string]*trajectory{}}
	s := &Server{ctx: ctx, summaryWait: opts.SummaryWait, indexing: make(chan struct{}, summaryWorkers), cat: cat, token: opts.Token, logger: opts.Logger}
	s.handler = s.guard(s.routes())
	return s, nil
}

func downloadDir(cache string) string {
	if cache == "" {
		return ""
	}
	return cache + "/trajectories"
}

// Token is the session secret; URL is where a browser starts with it.
func (s *Server) Token() string { return s.token }

// StartURL is the address to open for a server listening at addr.
func (s *Server) StartURL(addr net.Addr) string {
	return "http://" + addr.String() + "/?token=" + s.token
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Serve answers on ln until ctx ends.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(s.logger.Handler(), slog.LevelDebug)}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = hs.Shutdown(sctx)
		case <-done:
		}
	}()
	err := hs.Serve(ln)
	close(done)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// IsLoopback reports whether addr (host:port) names a loopback address.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// contentSecurityPolicy allows only the viewer's own script and style:
// no inline script, no inline style attribute, no other origin, no
// frames, no forms. Whatever an agent wrote into a trace cannot run even
// if some text escaped escaping.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// guard wraps every request: the Host must be a loopback name (a DNS
// rebinding page reaches us under its own host name), the session cookie
// (or the token, once, which then sets the cookie) must match, and every
// answer carries the security headers.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		if !IsLoopback(r.Host) {
			http.Error(w, "traj view answers only to a loopback host name (127.0.0.1, [::1], localhost)", http.StatusMisdirectedRequest)
			return
		}
		if tok := r.URL.Query().Get("token"); tok != "" {
			if !s.secretOK(tok) {
				http.Error(w, "wrong token: open the URL traj view printed", http.StatusForbidden)
				return
			}
			http.SetCookie(w, &http.Cookie{Name: cookieName, Value: s.token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			q := r.URL.Query()
			q.Del("token")
			u := *r.URL
			u.RawQuery = q.Encode()
			http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
			return
		}
		c, err := r.Cookie(cookieName)
		if err != nil || !s.secretOK(c.Value) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintln(w, "traj view: open the URL with ?token=… that `traj view` printed.")
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "read-only viewer", http.StatusMethodNotAllowed)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) secretOK(v string) bool {
	return subtle.ConstantTimeCompare([]byte(v), []byte(s.token)) == 1
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	files := http.FileServer(http.FS(static))
	mux.Handle("GET /static/", http.StripPrefix("/static/", files))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		data, err := fs.ReadFile(static, "index.html")
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(data)
	})
	mux.HandleFunc("GET /api/trajectories", s.apiTrajectories)
	mux.HandleFunc("GET /api/t/{id}", s.apiMeta)
	mux.HandleFunc("GET /api/t/{id}/curve", s.apiCurve)
	mux.HandleFunc("GET /api/t/{id}/parts", s.apiParts)
	mux.HandleFunc("GET /api/t/{id}/parts/{n}", s.apiPart)
	mux.HandleFunc("GET /api/t/{id}/diff/{n}", s.apiDiff)
	mux.HandleFunc("GET /api/t/{id}/tree/{n}", s.apiTree)
	mux.HandleFunc("GET /api/t/{id}/file/{n}", s.apiFile)
	mux.HandleFunc("GET /api/t/{id}/tests", s.apiTests)
	mux.HandleFunc("GET /api/t/{id}/sweeps", s.apiSweeps)
	mux.HandleFunc("GET /api/t/{id}/effect/{n}", s.apiEffect)
	mux.HandleFunc("GET /api/t/{id}/search", s.apiSearch)
	mux.HandleFunc("GET /api/t/{id}/nav/{n}", s.apiNav)
	mux.HandleFunc("GET /api/t/{id}/calls", s.apiCalls)
	mux.HandleFunc("GET /api/t/{id}/calls/{seq}", s.apiCall)
	mux.HandleFunc("GET /api/compare", s.apiCompare)
	return mux
}

// storeName is what the pages call the store.
func (s *Server) storeName() string {
	if u := s.cat.st.URI(""); u != "" {
		return u
	}
	return s.cat.storeURL
}
