package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"time"
)

// LoadRecord calls fn with call record name (ModelCallsName or
// ToolCallsName) of the trajectory whose objects are under prefix
// (TrajectoryPrefix): the whole object when it exists, else the call
// chunks a running trajectory uploaded at its turn ends, put back
// together from byte 0 without a gap (chunks that overlap, as after a
// resumed run sent its record again, are read once), one chunk in memory
// at a time. Without either, the error wraps ErrNotFound.
func LoadRecord(ctx context.Context, st Store, prefix, name string, fn func(io.Reader) error) error {
	err := st.Load(ctx, prefix+name, fn)
	if !errors.Is(err, ErrNotFound) {
		return err
	}
	type piece struct {
		key        string
		start, end int64
	}
	var pieces []piece
	dir := prefix + CallsDir + name + "/"
	if lerr := st.List(ctx, dir, func(fi FileInfo) error {
		a, b, ok := strings.Cut(path.Base(fi.Key), "-")
		start, err1 := strconv.ParseInt(a, 10, 64)
		end, err2 := strconv.ParseInt(b, 10, 64)
		if ok && err1 == nil && err2 == nil && end > start && start >= 0 {
			pieces = append(pieces, piece{fi.Key, start, end})
		}
		return nil
	}); lerr != nil {
		return fmt.Errorf("list the call chunks of %s: %w", prefix+name, lerr)
	}
	// The chain from 0: at each offset the chunk reaching furthest.
	var chain []piece
	for pos := int64(0); ; {
		best := -1
		for i, p := range pieces {
			if p.start <= pos && p.end > pos && (best < 0 || p.end > pieces[best].end) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		p := pieces[best]
		p.start, pos = pos, p.end // what the chunk adds starts at pos
		chain = append(chain, p)
	}
	if len(chain) == 0 {
		return err
	}
	pr, pw := io.Pipe()
	go func() {
		for _, p := range chain {
			// A retried Load calls fn again from the object's start: what
			// an earlier try already passed on is skipped.
			skip, done := p.start-startOf(p.key), int64(0)
			werr := st.Load(ctx, p.key, func(r io.Reader) error {
				if _, err := io.CopyN(io.Discard, r, skip+done); err != nil {
					return err
				}
				n, err := io.CopyN(pw, r, p.end-p.start-done)
				done += n
				return err
			})
			if werr != nil {
				pw.CloseWithError(fmt.Errorf("call chunk %s: %w", p.key, werr))
				return
			}
		}
		pw.Close()
	}()
	ferr := fn(pr)
	pr.CloseWithError(io.ErrClosedPipe) // ends the loader if fn stopped early
	return ferr
}

// startOf is the start offset a call chunk's key names.
func startOf(key string) int64 {
	a, _, _ := strings.Cut(path.Base(key), "-")
	n, _ := strconv.ParseInt(a, 10, 64)
	return n
}

// StatRecord is Stat for call record name under prefix (see LoadRecord):
// the whole object's, else the size its call chunks reach and the time of
// the newest one.
func StatRecord(ctx context.Context, st Store, prefix, name string) (FileInfo, error) {
	fi, err := st.Stat(ctx, prefix+name)
	if !errors.Is(err, ErrNotFound) {
		return fi, err
	}
	var out FileInfo
	found := false
	if lerr := st.List(ctx, prefix+CallsDir+name+"/", func(c FileInfo) error {
		_, b, ok := strings.Cut(path.Base(c.Key), "-")
		end, perr := strconv.ParseInt(b, 10, 64)
		if !ok || perr != nil {
			return nil
		}
		out.Size, out.ModTime, found = max(out.Size, end), maxTime(out.ModTime, c.ModTime), true
		return nil
	}); lerr != nil {
		return FileInfo{}, fmt.Errorf("list the call chunks of %s: %w", prefix+name, lerr)
	}
	if !found {
		return FileInfo{}, err
	}
	out.Key = prefix + name
	return out, nil
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
