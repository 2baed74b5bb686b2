package trace

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/trajlab/traj/trace/atomicfile"
)

// RecoverFromShadow makes the trace at path hold the better of itself and
// its shadow (ShadowPath), for a trace whose writer is gone: when the
// shadow is a readable trace with more parts than path, or path is
// unreadable or missing, the shadow's bytes replace path (atomicfile; the
// shadow stays). It reports whether it replaced path.
//
// Two cases leave the shadow ahead: a writer that found its trace changed
// behind its back (ErrTampered) kept the last good copy there; and a
// process killed between writing the shadow and exchanging the names
// leaves a complete document with one more part there, whose append had
// not returned yet (keeping it loses nothing). A torn shadow does not
// read as a trace and is ignored.
func RecoverFromShadow(path string) (bool, error) {
	shadow := ShadowPath(path)
	sp, err := countParts(shadow)
	if err != nil {
		return false, nil // no usable shadow
	}
	if cp, err := countParts(path); err == nil && cp >= sp {
		return false, nil
	}
	in, err := os.Open(shadow)
	if err != nil {
		return false, fmt.Errorf("recover trace from %s: %w", shadow, err)
	}
	defer in.Close()
	err = atomicfile.WriteFile(path, time.Time{}, func(f *os.File) error {
		_, err := io.Copy(f, in)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("recover trace from %s: %w", shadow, err)
	}
	return true, nil
}

// countParts reads the trace at path and returns its number of parts.
func countParts(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := 0
	err = Scan(f, Visitor{OnPart: func(int, *Part) error { n++; return nil }})
	return n, err
}
