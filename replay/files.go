package replay

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// MarshalIndent is json.MarshalIndent with two spaces and a final newline.
func MarshalIndent(v any) ([]byte, error) {
	var data []byte
	var err error
	if o, ok := v.(*Output); ok {
		data, err = o.marshalIndent()
	} else {
		data, err = json.MarshalIndent(v, "", "  ")
	}
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// CheckOutput refuses an output file (a summary, an evaluation, a report)
// that would overwrite a trace or land inside a protected folder (the
// store, the trajectory's folder): outputs never change their inputs.
func CheckOutput(path string, protected []string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("resolve output %q: %w", path, err)
	}
	for _, p := range protected {
		if p != "" && inside(abs, p) {
			return UsageError("output %s is inside %s (a store or a trajectory's folder); write it elsewhere", abs, p)
		}
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("output %s: %w", abs, err)
	case fi.IsDir():
		return UsageError("output %s is a folder; give a file name", abs)
	}
	if isTrace(abs) {
		return UsageError("output %s is a trace; refusing to overwrite it", abs)
	}
	return nil
}

// CheckReportOutput is CheckOutput for evaluate's report, and reads the
// report already at path: when it is one evaluate wrote, whole
// (ReadReportDigest), it is no trace and its inputs digest is returned
// (EvaluateOptions.Previous).
func CheckReportOutput(path string, protected []string) (previous string, err error) {
	if previous = ReadReportDigest(path); previous == "" {
		return "", CheckOutput(path, protected)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("resolve output %q: %w", path, err)
	}
	for _, p := range protected {
		if p != "" && inside(abs, p) {
			return "", UsageError("output %s is inside %s (a store or a trajectory's folder); write it elsewhere", abs, p)
		}
	}
	return previous, nil
}

// isTrace reports whether the file at path is a trace: a JSON object
// with a top-level "turns" key. The keys before "turns" are a trace's
// small header, so only they are read.
func isTrace(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	dec := json.NewDecoder(bufio.NewReader(io.LimitReader(f, 1<<20)))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return false
		}
		if key == "turns" {
			return true
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return false
		}
	}
	return false
}
