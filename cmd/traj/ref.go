package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// traceFile is the trace's name inside a trajectory folder.
const traceFile = "agent_trace.json"

// openTraceRef opens the trace a REF names: an agent_trace.json path or a
// trajectory folder holding one. Store ids and s3:// URLs plug in here.
// It returns the reader and a display name for messages.
func openTraceRef(ctx context.Context, g *Globals, ref string) (io.ReadCloser, string, error) {
	_, _ = ctx, g // store-backed references will need them
	if ref == "" {
		return nil, "", &exitError{2, errors.New("empty trace reference")}
	}
	path := filepath.Clean(ref)
	st, err := os.Stat(path)
	if err != nil {
		return nil, "", &exitError{2, fmt.Errorf("trace %s: %w", ref, err)}
	}
	if st.IsDir() {
		path = filepath.Join(path, traceFile)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, "", &exitError{2, fmt.Errorf("trace %s: %w", ref, err)}
	}
	if st, err := f.Stat(); err == nil && !st.Mode().IsRegular() {
		f.Close()
		return nil, "", &exitError{2, fmt.Errorf("trace %s: not a regular file", path)}
	}
	return f, path, nil
}
