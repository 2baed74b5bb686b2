// Package store is the artifact store contract: one small interface that a
// local folder and S3 both implement, the sentinel errors every
// implementation returns, and the key layout of a trajectory's artifacts.
//
// Wrappers (retry) and the uploader work on any Store; backends live in
// subpackages (local, s3), and location.Open picks one from a URL.
package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// Sentinel errors. Backends wrap them so callers test with errors.Is.
var (
	// ErrNotFound: the key does not exist in the store.
	ErrNotFound = errors.New("not found")
	// ErrInvalidKey: the key or id is malformed (empty, absolute, has ".."
	// or control characters). Never retried.
	ErrInvalidKey = errors.New("invalid key")
)

// Store keeps objects under slash-separated keys. Implementations are safe
// for concurrent use.
type Store interface {
	// Save stores src under key, replacing any object already there. Readers
	// see either the old object or the complete new one, never a partial
	// one. src may be opened more than once (a retry opens it again).
	Save(ctx context.Context, key string, src Source) error

	// Load calls fn once with the object's content. fn must not keep the
	// reader after it returns. A wrapper may call fn again on retry, so fn
	// must reset whatever it built from an earlier call. Returns an error
	// wrapping ErrNotFound if the key does not exist.
	Load(ctx context.Context, key string, fn func(io.Reader) error) error

	// Stat returns the object's size and modification time, or an error
	// wrapping ErrNotFound.
	Stat(ctx context.Context, key string) (FileInfo, error)

	// List calls fn for every object whose key starts with prefix, in
	// lexical key order. An fn error stops the listing and is returned.
	List(ctx context.Context, prefix string, fn func(FileInfo) error) error

	// Remove deletes the object. Removing a missing key is not an error, so
	// a retried Remove is safe.
	Remove(ctx context.Context, key string) error

	// URI names the object for humans and for the trace's artifacts map
	// (file:///abs/path or s3://bucket/prefix/key). It never holds
	// credentials.
	URI(key string) string
}

// FileInfo describes one stored object.
type FileInfo struct {
	Key     string
	Size    int64
	ModTime time.Time
	// SHA256 is the content's digest (hex) when the backend keeps one
	// (S3: saved with the object), else "". Stat fills it; List need not.
	SHA256 string
}

// LocalPather is implemented by stores whose objects are plain files, so a
// reader can use the file in place instead of copying it.
type LocalPather interface {
	LocalPath(key string) (string, error)
}

// Source is an object body that can be read more than once, so a retried
// Save can send it again. Open returns a fresh reader from the start and the
// number of bytes it will yield.
type Source interface {
	Open() (io.ReadCloser, int64, error)
}

// Bytes is a Source over an in-memory buffer. The caller must not modify
// the slice while a Save may still read it.
type Bytes []byte

// Open implements Source.
func (b Bytes) Open() (io.ReadCloser, int64, error) {
	return bytesReadCloser{bytes.NewReader(b)}, int64(len(b)), nil
}

// File is a Source reading a local file at upload time. Nothing is held in
// memory; each Open sees the file as it is then. The file must not change
// while a Save reads it (upload agent_trace.json once the writer is done;
// ship the running trace as chunks).
type File string

// Open implements Source.
func (f File) Open() (io.ReadCloser, int64, error) {
	fh, err := os.Open(string(f))
	if err != nil {
		return nil, 0, fmt.Errorf("open source %q: %w", string(f), err)
	}
	fi, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, 0, fmt.Errorf("stat source %q: %w", string(f), err)
	}
	return fh, fi.Size(), nil
}

// permanentError marks an error a retry cannot fix.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks err as not worth retrying (access denied, no such bucket,
// a malformed object). Backends and Load callbacks use it; retry.Wrap stops
// at it.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

// IsPermanent reports whether retrying the operation that returned err is
// pointless: err is marked Permanent; is ErrNotFound or ErrInvalidKey; is a
// file system error no retry fixes (a full disk or quota, a read-only file
// system, permission denied, a name too long, a file too large, a path
// through a file); or is a JSON parse error. A full store that answered
// every upload after eight attempts made a run's finish take minutes.
func IsPermanent(err error) bool {
	var p *permanentError
	if errors.As(err, &p) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrInvalidKey) {
		return true
	}
	for _, errno := range permanentErrnos {
		if errors.Is(err, errno) {
			return true
		}
	}
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	return errors.Is(err, fs.ErrPermission) || errors.As(err, &syntax) || errors.As(err, &typ)
}

// permanentErrnos are the system errors a retry cannot fix.
var permanentErrnos = []syscall.Errno{
	syscall.ENOSPC, syscall.EDQUOT, syscall.EROFS, syscall.EACCES, syscall.EPERM,
	syscall.ENAMETOOLONG, syscall.EFBIG, syscall.ENOTDIR, syscall.EISDIR, syscall.ELOOP,
}

// Unwrapper is implemented by wrappers (retry) to expose the store they wrap.
type Unwrapper interface {
	Unwrap() Store
}

// AsLocal returns the LocalPather behind s and any wrappers, if the
// innermost store keeps plain files.
func AsLocal(s Store) (LocalPather, bool) {
	for {
		if lp, ok := s.(LocalPather); ok {
			return lp, true
		}
		u, ok := s.(Unwrapper)
		if !ok {
			return nil, false
		}
		s = u.Unwrap()
	}
}
