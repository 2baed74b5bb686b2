package evaluation

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
)

// Cache holds evaluation results by content: the same tree evaluated by the
// same environment version on the same test paths gives the same result, so
// a second evaluate, or another trajectory reaching the same tree, reuses it.
type Cache interface {
	// Get returns the entry for key; ok is false when there is none.
	Get(ctx context.Context, key string) (e CacheEntry, ok bool, err error)
	// Put stores e under key, replacing any entry.
	Put(ctx context.Context, key string, e CacheEntry) error
}

// CacheEntry is what the cache stores: the key's inputs (checked on load so
// a corrupt or mismatched entry is never used) and the result.
type CacheEntry struct {
	// Key is the cache key the entry was written under; an entry read
	// under another key (copied from elsewhere) is foreign.
	Key  string `json:"key,omitempty"`
	Tree string `json:"tree"`
	// Artifact is the digest of the build's artifacts for an entry
	// written under ArtifactCacheKey (Tree is then empty).
	Artifact   string   `json:"artifact,omitempty"`
	EnvVersion string   `json:"env_version"`
	TestPaths  []string `json:"test_paths"`
	Result     Result   `json:"result"`
	// DurationMs is how long the original evaluation took.
	DurationMs int64 `json:"duration_ms"`
	// Digest is the SHA-256 of the entry's other fields (EntryDigest); an
	// entry whose content was changed after it was written fails it.
	Digest string `json:"digest,omitempty"`
}

// ErrBadEntry marks a cache entry that was read but must not be used
// (damaged, edited, foreign, or written before entries carried a digest):
// the tree is evaluated again and the entry overwritten.
var ErrBadEntry = errors.New("evaluation cache entry ignored")

// EntryDigest is the digest an entry carries: SHA-256 over the key
// version and the entry's JSON with Digest empty.
func EntryDigest(e CacheEntry) string {
	e.Digest = ""
	data, _ := json.Marshal(e) // plain structs: cannot fail
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", KeyVersion)
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// Seal sets the fields a written entry carries for the checks on read.
func Seal(key string, e CacheEntry) CacheEntry {
	e.Key = key
	e.Digest = EntryDigest(e)
	return e
}

// CheckEntry decodes data read under key and checks it: it must parse,
// carry key, and match its digest. The error wraps ErrBadEntry and says
// what is wrong.
func CheckEntry(key string, data []byte) (CacheEntry, error) {
	var e CacheEntry
	if err := json.Unmarshal(data, &e); err != nil {
		return CacheEntry{}, fmt.Errorf("%w: %s does not parse: %v", ErrBadEntry, key, err)
	}
	switch {
	case e.Digest == "":
		return CacheEntry{}, fmt.Errorf("%w: %s has no digest (written by an older traj, or by hand)", ErrBadEntry, key)
	case e.Key != key:
		return CacheEntry{}, fmt.Errorf("%w: %s holds the entry of key %q (foreign)", ErrBadEntry, key, e.Key)
	case EntryDigest(e) != e.Digest:
		return CacheEntry{}, fmt.Errorf("%w: %s does not match its digest (changed after it was written)", ErrBadEntry, key)
	}
	return e, nil
}

// KeyVersion changes when the key derivation or entry shape changes.
const KeyVersion = "traj-evalcache-v1"

// CacheKey derives the content address of an evaluation: sha256 over the
// tree hash, the environment version digest and the sorted test paths.
func CacheKey(tree, envVersion string, testPaths []string) string {
	paths := slices.Clone(testPaths)
	sort.Strings(paths)
	h := sha256.New()
	fmt.Fprintf(h, "%s\ntree %s\nenv %s\n", KeyVersion, tree, envVersion)
	for _, p := range paths {
		fmt.Fprintf(h, "path %s\n", p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ArtifactCacheKey is the content address of an evaluation keyed by the
// digest of the build's artifacts (KeyUse) instead of the tree: an entry
// written under it has Artifact set and Tree empty.
func ArtifactCacheKey(artifact, envVersion string, testPaths []string) string {
	return CacheKey("artifact "+artifact, envVersion, testPaths)
}

// MatchesArtifact reports whether e was stored for exactly these inputs
// under ArtifactCacheKey.
func (e CacheEntry) MatchesArtifact(artifact, envVersion string, testPaths []string) bool {
	return e.Artifact == artifact && e.Artifact != "" && e.Tree == "" && e.Matches("", envVersion, testPaths)
}

// Matches reports whether e was stored for exactly these inputs.
func (e CacheEntry) Matches(tree, envVersion string, testPaths []string) bool {
	a, b := slices.Clone(e.TestPaths), slices.Clone(testPaths)
	sort.Strings(a)
	sort.Strings(b)
	return e.Tree == tree && e.EnvVersion == envVersion && slices.Equal(a, b)
}
