package scripted

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
)

// ServeRequest is `traj model serve`: a script served on a loopback
// address until the context ends.
type ServeRequest struct {
	// Script is the script's file (JSON Lines).
	Script string
	// Addr is the loopback address to listen on (port 0: any).
	Addr string
	// SideModels are models whose requests never consume the script.
	SideModels []string
	// RequestLog, when set, is a file every request body is appended to
	// as a JSON line.
	RequestLog string
	// Stdout gets the line "listening on URL", Logger the rest.
	Stdout io.Writer
	Logger *slog.Logger
}

// RequestError is an error of the request itself (a bad script, a
// non-loopback address), not of serving it.
type RequestError struct{ Err error }

func (e *RequestError) Error() string { return e.Err.Error() }
func (e *RequestError) Unwrap() error { return e.Err }

// Serve parses the script, listens on the loopback address and serves
// until ctx is cancelled.
func Serve(ctx context.Context, r ServeRequest) error {
	if r.Logger == nil {
		r.Logger = slog.New(slog.DiscardHandler)
	}
	script, err := Load(r.Script)
	if err != nil {
		return &RequestError{err}
	}
	if err := loopbackOnly(r.Addr); err != nil {
		return &RequestError{err}
	}
	opts := Options{SideModels: r.SideModels, Logger: r.Logger}
	if r.RequestLog != "" {
		f, err := os.OpenFile(r.RequestLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("open request log: %w", err)
		}
		defer f.Close()
		opts.RequestLog = f
	}
	ln, err := net.Listen("tcp", r.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", r.Addr, err)
	}
	srv := New(script, opts)
	if r.Stdout != nil {
		fmt.Fprintf(r.Stdout, "listening on %s\n", BaseURL(ln.Addr()))
	}
	r.Logger.Info("scripted model serving", "script", r.Script, "responses", len(script.Responses), "url", BaseURL(ln.Addr()))
	if err := srv.Serve(ctx, ln); err != nil {
		return fmt.Errorf("serve scripted model: %w", err)
	}
	st := srv.Status()
	r.Logger.Info("scripted model stopped", "played", st.Played, "remaining", st.Remaining, "side", st.Side, "diverged", st.Diverged)
	return nil
}

// loopbackOnly refuses addresses that would expose the server beyond this host.
func loopbackOnly(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("address %q: only loopback addresses (127.0.0.1, ::1, localhost) are allowed", addr)
	}
	return nil
}
