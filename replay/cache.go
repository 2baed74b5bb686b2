package replay

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/trajlab/traj/environment/evaluation"
	"hash/crc32"
	"io"
	"maps"
	"slices"
	"strconv"
	"sync"
)

// Blobs is the part of an artifact store the cache needs.
type Blobs interface {
	Get(ctx context.Context, key string) ([]byte, error)
	Put(ctx context.Context, key string, data []byte) error
}

// BlobCache keeps cache entries as JSON objects in a store, one object per
// key at KeyFunc(key) (the store's EvalCacheKey layout).
type BlobCache struct {
	Blobs Blobs
	// KeyFunc maps a cache key to an object key.
	KeyFunc func(key string) string
	// IsNotFound reports whether a Get error means "no such object".
	IsNotFound func(error) bool
	// SetKeyFunc maps a set's name to an object key (the store's
	// EvalCacheSetKey); nil keeps no sets.
	SetKeyFunc func(name string) string
}

// Get implements Cache.
func (c *BlobCache) Get(ctx context.Context, key string) (CacheEntry, bool, error) {
	data, err := c.Blobs.Get(ctx, c.KeyFunc(key))
	if err != nil {
		if c.IsNotFound != nil && c.IsNotFound(err) {
			return CacheEntry{}, false, nil
		}
		return CacheEntry{}, false, fmt.Errorf("read evaluation cache %s: %w", key, err)
	}
	e, err := evaluation.CheckEntry(key, data)
	if err != nil {
		// Evaluate warns and evaluates the tree again, overwriting it.
		return CacheEntry{}, false, err
	}
	return e, true, nil
}

// Put implements Cache.
func (c *BlobCache) Put(ctx context.Context, key string, e CacheEntry) error {
	data, err := json.Marshal(evaluation.Seal(key, e))
	if err != nil {
		return fmt.Errorf("encode evaluation cache %s: %w", key, err)
	}
	if err := c.Blobs.Put(ctx, c.KeyFunc(key), data); err != nil {
		return fmt.Errorf("write evaluation cache %s: %w", key, err)
	}
	return nil
}

// MemCache is an in-memory Cache for one process (tests; the CLI always
// caches in a store, or not at all with --no-cache).
type MemCache struct {
	mu sync.Mutex
	m  map[string]CacheEntry
}

// Get implements Cache.
func (c *MemCache) Get(_ context.Context, key string) (CacheEntry, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	return e, ok, nil
}

// Put implements Cache.
func (c *MemCache) Put(_ context.Context, key string, e CacheEntry) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]CacheEntry)
	}
	c.m[key] = e
	return nil
}

// nopCache never hits.
type nopCache struct{}

func (nopCache) Get(context.Context, string) (CacheEntry, bool, error) {
	return CacheEntry{}, false, nil
}
func (nopCache) Put(context.Context, string, CacheEntry) error { return nil }

// SetCache is a Cache that also keeps sets: the entries of one
// trajectory's trees in one object, so a cached evaluate reads one object
// instead of one a tree (12,500 at 50,000 parts). A set is a copy of
// entries the cache checked; the entries stay the record: a set that is
// missing, damaged or lacks a tree costs the per-tree reads, never a
// wrong result.
type SetCache interface {
	Cache
	// LoadSet returns the entries of set name by tree (nil when it does
	// not exist). An error means the set cannot be used.
	LoadSet(ctx context.Context, name string) (*Set, error)
	// SaveSet replaces set name and sets set.Sum to the stored object's.
	SaveSet(ctx context.Context, name string, set *Set) error
	// SetSum returns the Sum of set name as stored, without decoding its
	// entries ("" when it does not exist). An error means the set cannot
	// be used.
	SetSum(ctx context.Context, name string) (string, error)
}

// Set is the cache entries of one environment version and test paths,
// by tree.
type Set struct {
	EnvVersion string
	TestPaths  []string
	Entries    map[string]SetEntry
	// Sum is the SHA-256 of the set's object as read or written (hex; ""
	// for a set never stored): one value that stands for every entry.
	Sum string
}

// SetEntry is one tree's entry in a set: what the cache entry holds
// besides the set's environment and paths, and the entry's digest.
type SetEntry struct {
	Digest     string
	DurationMs int64
	Result     []byte // JSON
}

// setVersion is a set object's first line.
const setVersion = "traj-evalcache-set-v1"

// SetName names the set of trajectory id's trees evaluated by
// envVersion on testPaths (in that order: the entries' digests cover it).
func SetName(id, envVersion string, testPaths []string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\ntrajectory %q\nenv %q\n", setVersion, evaluation.KeyVersion, id, envVersion)
	for _, p := range testPaths {
		fmt.Fprintf(h, "path %q\n", p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// EncodeSet writes a set object: its version line, "env <version>" and
// "path <path>" lines (quoted), one line per tree ("<tree> <digest>
// <duration ms> <result JSON>", trees sorted) and a last line "sum
// <CRC-32C of every byte before it>", which DecodeSet checks (a CRC, as
// the part index's: it catches a cut or edited set at 6 GB/s; decoding
// an entry checks its own SHA-256 digest again).
func EncodeSet(set *Set) []byte {
	trees := slices.Sorted(maps.Keys(set.Entries))
	n := 256
	for _, t := range trees {
		n += len(t) + 100 + len(set.Entries[t].Result)
	}
	b := make([]byte, 0, n)
	b = fmt.Appendf(b, "%s\nenv %q\n", setVersion, set.EnvVersion)
	for _, p := range set.TestPaths {
		b = fmt.Appendf(b, "path %q\n", p)
	}
	for _, t := range trees {
		e := set.Entries[t]
		b = append(b, t...)
		b = append(b, ' ')
		b = append(b, e.Digest...)
		b = append(b, ' ')
		b = strconv.AppendInt(b, e.DurationMs, 10)
		b = append(b, ' ')
		b = append(b, e.Result...)
		b = append(b, '\n')
	}
	return fmt.Appendf(b, "sum %08x\n", crc32.Checksum(b, castagnoli))
}

// DecodeSet reads a set object EncodeSet wrote. Anything else — another
// version, a line out of shape, a sum that does not match (the object was
// cut or changed after it was written) — is an error wrapping
// evaluation.ErrBadEntry.
func DecodeSet(data []byte) (*Set, error) {
	body, err := checkSet(data)
	if err != nil {
		return nil, err
	}
	line, rest, _ := bytes.Cut(body, []byte("\n"))
	if string(line) != setVersion {
		return nil, fmt.Errorf("%w: set version %.40q", evaluation.ErrBadEntry, line)
	}
	set := &Set{TestPaths: []string{}, Sum: setSum(data)}
	line, rest, _ = bytes.Cut(rest, []byte("\n"))
	q, ok := bytes.CutPrefix(line, []byte("env "))
	if set.EnvVersion, err = strconv.Unquote(string(q)); !ok || err != nil {
		return nil, fmt.Errorf("%w: set env line %.80q", evaluation.ErrBadEntry, line)
	}
	for bytes.HasPrefix(rest, []byte("path ")) {
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		p, err := strconv.Unquote(string(line[len("path "):]))
		if err != nil {
			return nil, fmt.Errorf("%w: set path line %.80q", evaluation.ErrBadEntry, line)
		}
		set.TestPaths = append(set.TestPaths, p)
	}
	set.Entries = make(map[string]SetEntry, bytes.Count(rest, []byte("\n")))
	for len(rest) > 0 {
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		f := bytes.SplitN(line, []byte(" "), 4)
		if len(f) != 4 {
			return nil, fmt.Errorf("%w: set line %.80q", evaluation.ErrBadEntry, line)
		}
		d, err := strconv.ParseInt(string(f[2]), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: set line %.80q", evaluation.ErrBadEntry, line)
		}
		set.Entries[string(f[0])] = SetEntry{Digest: string(f[1]), DurationMs: d, Result: f[3]}
	}
	return set, nil
}

// checkSet checks a set object's last line, the CRC of the rest, and
// returns the rest.
func checkSet(data []byte) ([]byte, error) {
	body, last, ok := cutLastLine(data)
	if !ok {
		return nil, fmt.Errorf("%w: set has no sum line", evaluation.ErrBadEntry)
	}
	if string(last) != fmt.Sprintf("sum %08x", crc32.Checksum(body, castagnoli)) {
		return nil, fmt.Errorf("%w: set does not match its sum (cut or changed after it was written)", evaluation.ErrBadEntry)
	}
	return body, nil
}

// setSum is Set.Sum of a set object's bytes.
func setSum(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// cutLastLine splits data ending in '\n' into what comes before its last
// line and that line (without its '\n').
func cutLastLine(data []byte) (body, last []byte, ok bool) {
	if len(data) == 0 || data[len(data)-1] != '\n' {
		return nil, nil, false
	}
	i := bytes.LastIndexByte(data[:len(data)-1], '\n')
	if i < 0 {
		return nil, nil, false
	}
	return data[:i+1], data[i+1 : len(data)-1], true
}

// entry rebuilds tree's cache entry from the set and checks it against
// its digest (EntryDigest), as CheckEntry checks an entry read alone.
func (s *Set) entry(tree string) (CacheEntry, error) {
	se := s.Entries[tree]
	key := evaluation.CacheKey(tree, s.EnvVersion, s.TestPaths)
	e := CacheEntry{Key: key, Tree: tree, EnvVersion: s.EnvVersion, TestPaths: s.TestPaths, DurationMs: se.DurationMs, Digest: se.Digest}
	if err := json.Unmarshal(se.Result, &e.Result); err != nil {
		return CacheEntry{}, fmt.Errorf("%w: set entry of tree %s does not parse: %v", evaluation.ErrBadEntry, tree, err)
	}
	if evaluation.EntryDigest(e) != e.Digest {
		return CacheEntry{}, fmt.Errorf("%w: set entry of tree %s does not match its digest", evaluation.ErrBadEntry, tree)
	}
	return e, nil
}

// add puts e, sealed under its key, into the set; false when e is not of
// the set's environment and paths (in order).
func (s *Set) add(e CacheEntry) (bool, error) {
	if e.EnvVersion != s.EnvVersion || !slices.Equal(e.TestPaths, s.TestPaths) {
		return false, nil
	}
	key := evaluation.CacheKey(e.Tree, s.EnvVersion, s.TestPaths)
	if e.Key != key || e.Digest == "" {
		e = evaluation.Seal(key, e)
	}
	res, err := json.Marshal(e.Result)
	if err != nil {
		return false, fmt.Errorf("encode evaluation cache %s: %w", key, err)
	}
	s.Entries[e.Tree] = SetEntry{Digest: e.Digest, DurationMs: e.DurationMs, Result: res}
	return true, nil
}

// LoadSet implements SetCache (nothing when SetKeyFunc is nil).
func (c *BlobCache) LoadSet(ctx context.Context, name string) (*Set, error) {
	if c.SetKeyFunc == nil {
		return nil, nil
	}
	data, err := c.Blobs.Get(ctx, c.SetKeyFunc(name))
	if err != nil {
		if c.IsNotFound != nil && c.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("read evaluation cache set %s: %w", name, err)
	}
	set, err := DecodeSet(data)
	if err != nil {
		return nil, fmt.Errorf("evaluation cache set %s: %w", name, err)
	}
	return set, nil
}

// SaveSet implements SetCache.
func (c *BlobCache) SaveSet(ctx context.Context, name string, set *Set) error {
	if c.SetKeyFunc == nil {
		return nil
	}
	data := EncodeSet(set)
	if err := c.Blobs.Put(ctx, c.SetKeyFunc(name), data); err != nil {
		return fmt.Errorf("write evaluation cache set %s: %w", name, err)
	}
	set.Sum = setSum(data)
	return nil
}

// BlobLoader is Blobs that can also stream an object to fn: SetSum then
// checks a set without holding it (2 MB at 50,000 parts, most of a cached
// evaluate's memory).
type BlobLoader interface {
	Load(ctx context.Context, key string, fn func(io.Reader) error) error
}

// SetSum implements SetCache.
func (c *BlobCache) SetSum(ctx context.Context, name string) (string, error) {
	if c.SetKeyFunc == nil {
		return "", nil
	}
	var sum string
	err := c.load(ctx, c.SetKeyFunc(name), func(r io.Reader) error {
		var serr error
		sum, serr = streamSetSum(r)
		return serr
	})
	switch {
	case errors.Is(err, evaluation.ErrBadEntry):
		return "", fmt.Errorf("evaluation cache set %s: %w", name, err)
	case err != nil && c.IsNotFound != nil && c.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("read evaluation cache set %s: %w", name, err)
	}
	return sum, nil
}

// load streams object key to fn: through Blobs' own Load when it has one
// (BlobLoader), else from the object read whole.
func (c *BlobCache) load(ctx context.Context, key string, fn func(io.Reader) error) error {
	if l, ok := c.Blobs.(BlobLoader); ok {
		return l.Load(ctx, key, fn)
	}
	data, err := c.Blobs.Get(ctx, key)
	if err != nil {
		return err
	}
	return fn(bytes.NewReader(data))
}

// streamSetSum is checkSet and setSum of the set object read from r,
// holding only its last line: "sum <8 hex>\n", the CRC of what precedes
// it.
func streamSetSum(r io.Reader) (string, error) {
	const last = len("sum 01234567\n")
	h, crc := sha256.New(), crc32.New(castagnoli)
	buf := make([]byte, 64<<10)
	held := 0 // bytes at buf's start not yet in crc
	for {
		n, err := r.Read(buf[held:])
		h.Write(buf[held : held+n])
		held += n
		if held > last {
			crc.Write(buf[:held-last])
			held = copy(buf, buf[held-last:held])
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
	}
	if held != last || string(buf[:last]) != fmt.Sprintf("sum %08x\n", crc.Sum32()) {
		return "", fmt.Errorf("%w: set does not match its sum (cut or changed after it was written)", evaluation.ErrBadEntry)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
