package replay_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/githistory"
	"github.com/trajlab/traj/replay/replaytest"
)

// memBlobs is an in-memory replay.Blobs counting its reads.
type memBlobs struct {
	mu    sync.Mutex
	m     map[string][]byte
	reads int
}

var errNoBlob = errors.New("no such blob")

func (b *memBlobs) Get(_ context.Context, key string) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reads++
	data, ok := b.m[key]
	if !ok {
		return nil, errNoBlob
	}
	return bytes.Clone(data), nil
}

func (b *memBlobs) Put(_ context.Context, key string, data []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string][]byte{}
	}
	b.m[key] = bytes.Clone(data)
	return nil
}

// setKey is the one set a test's blobs hold.
func (b *memBlobs) setKey(t *testing.T) string {
	t.Helper()
	for k := range b.m {
		if strings.HasPrefix(k, "sets/") {
			return k
		}
	}
	t.Fatal("no evaluation cache set was written")
	return ""
}

func blobCache(b *memBlobs, sets bool) *replay.BlobCache {
	c := &replay.BlobCache{Blobs: b, KeyFunc: func(k string) string { return "entries/" + k },
		IsNotFound: func(err error) bool { return errors.Is(err, errNoBlob) }}
	if sets {
		c.SetKeyFunc = func(n string) string { return "sets/" + n }
	}
	return c
}

// TestCachedEvaluateFastPath: a cached evaluate that reads the parts'
// commits from the part index, the trees from the bundles' leading
// commits (the history never indexed) and the results from the
// trajectory's set writes the report the full path writes (whole trace
// decoded, every commit looked up in the opened history, one cache read
// a tree); an unchanged report is left as it is; a damaged or forged set
// never changes a score.
func TestCachedEvaluateFastPath(t *testing.T) {
	for _, spec := range []replaytest.Spec{
		{ID: "traj-fast", Changes: replaytest.AttributionScript(), TurnSize: 4, TrajFields: true},
		{ID: "traj-fast-git", Changes: replaytest.AttributionScript(), TurnSize: 3, TrajFields: true, GitCLIBundle: true},
		{ID: "traj-fast-original", Changes: replaytest.AttributionScript(), TurnSize: 5},
	} {
		t.Run(spec.ID, func(t *testing.T) {
			ctx := context.Background()
			tj := replaytest.BuildSpec(t, spec)
			clock := func() time.Time { return time.Unix(1_700_000_000, 0) }
			blobs := &memBlobs{}
			opts := replay.EvaluateOptions{TestPaths: []string{"basics", "extra"}, Workers: 2, Now: clock, EnvironmentName: "tiny"}
			full := func(c replay.Cache) []byte {
				t.Helper()
				h := openHistory(t, tj)
				o := opts
				o.Cache = c
				out, err := replay.Evaluate(ctx, tj.Trace, h, replaytest.TinyEnv{}, o)
				if err != nil {
					t.Fatal(err)
				}
				data, err := replay.MarshalIndent(out)
				if err != nil {
					t.Fatal(err)
				}
				return data
			}
			fast := func(c replay.Cache, previous string) ([]byte, *githistory.History, error) {
				t.Helper()
				h, err := githistory.OpenLazy(tj.BundlePath)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { h.Close() })
				parts, commits, err := replay.PartCommitsAt(tj.TracePath)
				if err != nil {
					t.Fatal(err)
				}
				o := opts
				o.Cache, o.Previous = c, previous
				out, err := replay.EvaluateParts(ctx, tj.Trace.TrajectoryID, parts, commits, h, replaytest.TinyEnv{}, o)
				if err != nil {
					return nil, h, err
				}
				data, err := replay.MarshalIndent(out)
				if err != nil {
					t.Fatal(err)
				}
				return data, h, nil
			}

			full(blobCache(blobs, true)) // evaluates every tree, writes the entries and the set
			want := full(blobCache(blobs, false))
			if !bytes.Contains(want, []byte(`"inputs_digest"`)) {
				t.Fatalf("a report served by the cache has no inputs digest:\n%s", want)
			}
			blobs.reads = 0
			got, h, err := fast(blobCache(blobs, true), "")
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("fast path report differs from the full path's:\n%s\nwant:\n%s", got, want)
			}
			if blobs.reads != 1 {
				t.Fatalf("fast path read %d cache objects, want the set alone", blobs.reads)
			}
			if h.Opened() {
				t.Fatal("fast path opened the whole history: every commit is among the bundle's leading commits")
			}

			// The same inputs: nothing is built.
			previous := digestOf(t, want)
			if _, _, err := fast(blobCache(blobs, true), previous); !errors.Is(err, replay.ErrUnchanged) {
				t.Fatalf("evaluate with the report's own inputs digest: %v, want ErrUnchanged", err)
			}
			// Another environment version is another evaluation.
			if _, _, err := fast(blobCache(blobs, true), previous+"0"); err != nil {
				t.Fatal(err)
			}

			setKey := blobs.setKey(t)
			set := blobs.m[setKey]
			for _, attack := range append(setEdits(), setEdit{"another set", func([]byte) []byte {
				other := &memBlobs{}
				if _, err := replay.Evaluate(ctx, tj.Trace, openHistory(t, tj), replaytest.TinyEnv{V: "tiny-2"},
					replay.EvaluateOptions{TestPaths: opts.TestPaths, Workers: 1, Cache: blobCache(other, true)}); err != nil {
					t.Fatal(err)
				}
				return other.m[other.setKey(t)]
			}}) {
				t.Run(attack.name, func(t *testing.T) {
					blobs.m[setKey] = attack.edit(set)
					got, _, err := fast(blobCache(blobs, true), "")
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got, want) {
						t.Fatalf("report from a damaged set differs:\n%s\nwant:\n%s", got, want)
					}
					if !bytes.Equal(blobs.m[setKey], set) {
						t.Fatal("the set was not written again from the entries")
					}
				})
			}
		})
	}
}

// setEdit is an attack on a set object's bytes.
type setEdit struct {
	name string
	edit func([]byte) []byte
}

// setEdits change a set's results or lines, with its sum left or forged,
// or cut it.
func setEdits() []setEdit {
	return []setEdit{
		{"a result changed, sum left", func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"passed":1`), []byte(`"passed":9`), 1)
		}},
		{"a result changed, sum forged", func(b []byte) []byte {
			return resum(bytes.Replace(b, []byte(`"passed":1`), []byte(`"passed":9`), 1))
		}},
		{"a line dropped, sum forged", func(b []byte) []byte {
			lines := bytes.SplitAfter(b, []byte("\n"))
			return resum(bytes.Join(append(lines[:3:3], lines[4:]...), nil))
		}},
		{"cut", func(b []byte) []byte { return b[:len(b)/2] }},
	}
}

// resum gives a set object a sum matching its edited bytes.
func resum(b []byte) []byte {
	i := bytes.LastIndex(b[:len(b)-1], []byte("\n"))
	body := b[:i+1]
	return fmt.Appendf(bytes.Clone(body), "sum %08x\n", crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
}

// digestOf writes report to a file and reads its inputs digest back.
func digestOf(t *testing.T, report []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "evaluation.json")
	if err := os.WriteFile(p, report, 0o644); err != nil {
		t.Fatal(err)
	}
	d := replay.ReadReportDigest(p)
	if d == "" || d != replay.ReportDigest(report) {
		t.Fatalf("report's inputs digest not read back: %q", d)
	}
	return d
}

// TestReadReportDigest: a report changed after it was written, cut, or
// without an inputs digest gives none, so it is built again.
func TestReadReportDigest(t *testing.T) {
	ctx := context.Background()
	tj := replaytest.Build(t, "traj-report-digest", replaytest.AttributionScript()[:4], 2, true)
	opts := replay.EvaluateOptions{TestPaths: []string{"basics"}, Workers: 1, Cache: blobCache(&memBlobs{}, true)}
	first, err := replay.Evaluate(ctx, tj.Trace, openHistory(t, tj), replaytest.TinyEnv{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	evaluated, _ := replay.MarshalIndent(first)
	out, err := replay.Evaluate(ctx, tj.Trace, openHistory(t, tj), replaytest.TinyEnv{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	report, _ := replay.MarshalIndent(out)
	d := digestOf(t, report)
	if !bytes.Contains(report, []byte(`"source": "cache"`)) {
		t.Fatalf("report served by the cache:\n%s", report)
	}
	if len(d) != 64 {
		t.Fatalf("inputs digest %q", d)
	}
	for name, data := range map[string][]byte{
		"edited":          bytes.Replace(report, []byte(`"source": "cache"`), []byte(`"source": "evaluated"`), 1),
		"cut":             report[:len(report)-10],
		"trailing byte":   append(bytes.Clone(report), ' '),
		"evaluated trees": evaluated, // trees run by that evaluate: no digest
		"empty":           {},
	} {
		p := filepath.Join(t.TempDir(), "evaluation.json")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if got := replay.ReadReportDigest(p); got != "" {
			t.Errorf("%s report: inputs digest %q, want none", name, got)
		}
	}
}
