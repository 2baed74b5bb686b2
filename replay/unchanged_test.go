package replay_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/trajlab/traj/environment/evaluation"
	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/githistory"
	"github.com/trajlab/traj/replay/replaytest"
	"github.com/trajlab/traj/trace"
)

// loaderBlobs is memBlobs that also streams objects (replay.BlobLoader),
// through wrap: readers that return a byte, or half a buffer, at a time.
type loaderBlobs struct {
	*memBlobs
	wrap func(io.Reader) io.Reader
}

func (b loaderBlobs) Load(ctx context.Context, key string, fn func(io.Reader) error) error {
	data, err := b.Get(ctx, key)
	if err != nil {
		return err
	}
	return fn(b.wrap(bytes.NewReader(data)))
}

// TestUnchanged: after a cached evaluate with the parts' digest, the
// report's inputs digest is recognised from that digest and the cache
// set's sum alone (one object read), and every other input, or a set
// changed in any way, is not.
func TestUnchanged(t *testing.T) {
	ctx := context.Background()
	tj := replaytest.BuildSpec(t, replaytest.Spec{ID: "traj-unchanged", Changes: replaytest.AttributionScript(), TurnSize: 4, TrajFields: true})
	partsDigest, _, err := trace.PartIndexDigest(tj.TracePath)
	if err != nil {
		t.Fatal(err)
	}
	mem := &memBlobs{}
	cache := func() *replay.BlobCache {
		c := blobCache(mem, true)
		c.Blobs = loaderBlobs{mem, iotest.HalfReader}
		return c
	}
	opts := replay.EvaluateOptions{TestPaths: []string{"basics", "extra"}, Workers: 2, EnvironmentName: "tiny", PartsDigest: partsDigest}
	evaluate := func() *replay.Output {
		t.Helper()
		h, err := githistory.OpenLazy(tj.BundlePath)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		parts, commits, err := replay.PartCommitsAt(tj.TracePath)
		if err != nil {
			t.Fatal(err)
		}
		o := opts
		o.Cache = cache()
		out, err := replay.EvaluateParts(ctx, tj.Trace.TrajectoryID, parts, commits, h, replaytest.TinyEnv{}, o)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if out := evaluate(); out.InputsDigest != "" {
		t.Fatalf("an evaluate that ran trees has inputs digest %q", out.InputsDigest)
	}
	previous := evaluate().InputsDigest
	if previous == "" {
		t.Fatal("a report the cache served has no inputs digest")
	}
	unchanged := func(o replay.EvaluateOptions, ev replay.Evaluator) bool {
		o.Cache, o.Previous = cache(), previous
		return replay.Unchanged(ctx, tj.Trace.TrajectoryID, ev, o)
	}
	mem.reads = 0
	if !unchanged(opts, replaytest.TinyEnv{}) {
		t.Fatal("the report's own inputs are not recognised as unchanged")
	}
	if mem.reads != 1 {
		t.Errorf("Unchanged read %d objects, want the set alone", mem.reads)
	}
	if again := evaluate().InputsDigest; again != previous {
		t.Errorf("a second cached evaluate's digest %.12s, want %.12s", again, previous)
	}

	other := func(edit func(*replay.EvaluateOptions)) replay.EvaluateOptions {
		o := opts
		edit(&o)
		return o
	}
	for _, tc := range []struct {
		name string
		opts replay.EvaluateOptions
		ev   replay.Evaluator
	}{
		{"other parts", other(func(o *replay.EvaluateOptions) { o.PartsDigest = hex.EncodeToString(make([]byte, 32)) }), replaytest.TinyEnv{}},
		{"no parts digest", other(func(o *replay.EvaluateOptions) { o.PartsDigest = "" }), replaytest.TinyEnv{}},
		{"another environment version", opts, replaytest.TinyEnv{V: "tiny-2"}},
		{"other test paths", other(func(o *replay.EvaluateOptions) { o.TestPaths = []string{"basics"} }), replaytest.TinyEnv{}},
		{"test paths in another order", other(func(o *replay.EvaluateOptions) { o.TestPaths = []string{"extra", "basics"} }), replaytest.TinyEnv{}},
		{"other workers", other(func(o *replay.EvaluateOptions) { o.Workers = 3 }), replaytest.TinyEnv{}},
		{"another environment name", other(func(o *replay.EvaluateOptions) { o.EnvironmentName = "huge" }), replaytest.TinyEnv{}},
	} {
		if unchanged(tc.opts, tc.ev) {
			t.Errorf("%s: recognised as unchanged", tc.name)
		}
	}

	setKey := mem.setKey(t)
	set := mem.m[setKey]
	for _, attack := range append(setEdits(),
		setEdit{"sum line alone", func(b []byte) []byte { return b[bytes.LastIndex(b[:len(b)-1], []byte("\n"))+1:] }},
		setEdit{"a byte more", func(b []byte) []byte { return append(bytes.Clone(b), '\n') }},
		setEdit{"missing", func([]byte) []byte { return nil }},
	) {
		if attack.name == "missing" {
			delete(mem.m, setKey)
		} else {
			mem.m[setKey] = attack.edit(set)
		}
		if unchanged(opts, replaytest.TinyEnv{}) {
			t.Errorf("set %s: recognised as unchanged", attack.name)
		}
		mem.m[setKey] = set
	}

	// The streamed check and the one on the whole object agree, whatever
	// the reads' sizes.
	want := sha256.Sum256(set)
	for name, blobs := range map[string]replay.Blobs{
		"whole":      mem,
		"a byte":     loaderBlobs{mem, iotest.OneByteReader},
		"half":       loaderBlobs{mem, iotest.HalfReader},
		"data error": loaderBlobs{mem, func(r io.Reader) io.Reader { return iotest.DataErrReader(r) }},
	} {
		c := blobCache(mem, true)
		c.Blobs = blobs
		name := name
		sum, err := c.SetSum(ctx, setKey[len("sets/"):])
		if err != nil || sum != hex.EncodeToString(want[:]) {
			t.Errorf("%s: SetSum %.12s, %v; want %.12s", name, sum, err, hex.EncodeToString(want[:]))
		}
		mem.m[setKey] = set[:len(set)-1]
		if _, err := c.SetSum(ctx, setKey[len("sets/"):]); !errors.Is(err, evaluation.ErrBadEntry) {
			t.Errorf("%s: SetSum of a cut set: %v, want ErrBadEntry", name, err)
		}
		mem.m[setKey] = set
	}
}
