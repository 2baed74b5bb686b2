package gitstate

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// gitPack writes the pack of every object of the git CLI repository src,
// as `git pack-objects` makes it with args, and returns its path.
func gitPack(t *testing.T, src string, args ...string) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("git", append([]string{"pack-objects", "-q", "--revs", "--all", filepath.Join(dir, "p")}, args...)...)
	cmd.Dir = src
	cmd.Env = gitEnv()
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git pack-objects: %v", err)
	}
	return filepath.Join(dir, "p-"+strings.TrimSpace(string(out))+".pack")
}

// ourIdx indexes the pack at path with packIndex, holding at most budget
// bytes of delta bases, and returns the .idx it writes.
func ourIdx(t *testing.T, path string, budget int) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := newPackIndex(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	p.budget = budget
	if err := p.scan(); err != nil {
		t.Fatal(err)
	}
	if err := p.resolve(); err != nil {
		t.Fatal(err)
	}
	var sum plumbing.Hash
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	copy(sum[:], data[len(data)-20:])
	var idx bytes.Buffer
	if err := p.writeIdx(&idx, sum); err != nil {
		t.Fatal(err)
	}
	return idx.Bytes()
}

// TestIndexPackMatchesGit: the .idx traj writes for a pack is byte for
// byte the one `git index-pack` writes, whether deltas name their base by
// offset or by hash, and when no base may be held at all (every base
// rebuilt from its chain each time a child needs it).
func TestIndexPackMatchesGit(t *testing.T) {
	src := cliRepo(t, 40)
	// More versions of one file, so deltas form chains and a base has
	// several children.
	for i := 0; i < 30; i++ {
		writeFile(t, src, "big.txt", strings.Repeat(fmt.Sprintf("line %d of text\n", i%7), 300+i*(i%3)), 0o644)
		gitRun(t, src, "commit", "-q", "-am", fmt.Sprintf("edit %d", i))
		if i%10 == 0 {
			gitRun(t, src, "branch", fmt.Sprintf("b%d", i))
		}
	}
	for _, tt := range []struct {
		name   string
		args   []string
		budget int
	}{
		{"ofs deltas", []string{"--delta-base-offset"}, heldBudget},
		{"ref deltas", nil, heldBudget},
		{"ofs deltas, nothing held", []string{"--delta-base-offset", "--depth=250", "--window=50"}, 1},
		{"ref deltas, nothing held", []string{"--depth=250", "--window=50"}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pack := gitPack(t, src, tt.args...)
			want := filepath.Join(t.TempDir(), "git.idx")
			gitRun(t, src, "index-pack", "-o", want, pack)
			wantIdx, err := os.ReadFile(want)
			if err != nil {
				t.Fatal(err)
			}
			if got := ourIdx(t, pack, tt.budget); !bytes.Equal(got, wantIdx) {
				t.Fatalf("idx differs from git index-pack's (%d vs %d bytes)", len(got), len(wantIdx))
			}
		})
	}
}

// packEntrySpec is one entry of a hand-made pack.
type packEntrySpec struct {
	typ  plumbing.ObjectType
	size int           // the size the entry header declares
	dist int64         // OFS_DELTA: distance back to the base's entry
	ref  plumbing.Hash // REF_DELTA: the base
	data []byte        // compressed into the entry
}

// handPack builds a pack (header, entries, SHA-1 trailer) as an attacker
// would: sizes are whatever the spec says.
func handPack(t testing.TB, entries []packEntrySpec) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("PACK")
	binary.Write(&b, binary.BigEndian, uint32(2))
	binary.Write(&b, binary.BigEndian, uint32(len(entries)))
	for _, e := range entries {
		if err := writeEntryHeader(&b, e.typ, e.size); err != nil {
			t.Fatal(err)
		}
		switch e.typ {
		case plumbing.OFSDeltaObject:
			b.Write(ofsDeltaOffset(e.dist))
		case plumbing.REFDeltaObject:
			b.Write(e.ref[:])
		}
		zw := zlib.NewWriter(&b)
		zw.Write(e.data)
		zw.Close()
	}
	sum := sha1.Sum(b.Bytes())
	b.Write(sum[:])
	return b.Bytes()
}

// leb appends n as a delta header's size.
func leb(b []byte, n uint64) []byte {
	for n >= 0x80 {
		b = append(b, byte(n)|0x80)
		n >>= 7
	}
	return append(b, byte(n))
}

// bombDelta is a delta that really builds resultSize bytes from a base of
// 64 KiB: one-byte copy instructions of 64 KiB each, which zlib squeezes
// to almost nothing (4 GiB from a pack of a few hundred bytes).
func bombDelta(resultSize uint64) []byte {
	d := leb(leb(nil, 64<<10), resultSize)
	return append(d, bytes.Repeat([]byte{0x80}, int(resultSize/(64<<10)))...)
}

// TestDeltaBombRefused: a delta that declares a result, a base or
// instructions above maxDeltaObject is refused with an error naming the
// object and the size, without building it, in a full pack and in a thin
// (incremental) one; a whole object that inflates past its declared size
// is refused too. Nothing is stored.
func TestDeltaBombRefused(t *testing.T) {
	base := make([]byte, 64<<10)
	baseHash := plumbing.ComputeHash(plumbing.BlobObject, base)
	blob := packEntrySpec{typ: plumbing.BlobObject, size: len(base), data: base}
	// The blob's entry is 12 bytes after the pack header; the delta
	// follows it.
	blobLen := int64(len(handPack(t, []packEntrySpec{blob})) - 12 - 20)
	const fourGiB = 4 << 30
	bomb := bombDelta(fourGiB)

	// A thin bundle's prerequisite holding the 64 KiB blob.
	prereq := initIn(t, t.TempDir(), Options{Now: fixedClock()})
	writeFile(t, prereq.Dir(), "zeros", string(base), 0o644)
	mustCheckpoint(t, prereq, 1)
	prereqHead, err := prereq.Head()
	if err != nil {
		t.Fatal(err)
	}
	some := strings.Repeat("ab", 20)

	tests := []struct {
		name    string
		prereq  bool
		entries []packEntrySpec
		want    []string
	}{
		{"full pack, 4 GiB result", false, []packEntrySpec{blob,
			{typ: plumbing.OFSDeltaObject, size: len(bomb), dist: blobLen, data: bomb}},
			[]string{fmt.Sprintf("delta at offset %d (base at offset 12)", 12+blobLen), fmt.Sprint(fourGiB), "64 MiB"}},
		{"thin pack, 4 GiB result", true, []packEntrySpec{
			{typ: plumbing.REFDeltaObject, size: len(bomb), ref: baseHash, data: bomb}},
			[]string{"delta at offset 12 (base " + baseHash.String() + ")", fmt.Sprint(fourGiB)}},
		{"instructions above the limit", false, []packEntrySpec{blob,
			{typ: plumbing.OFSDeltaObject, size: 1 << 40, dist: blobLen, data: bomb}},
			[]string{"delta at offset", fmt.Sprint(1 << 40), "instructions"}},
		{"base above the limit", false, []packEntrySpec{blob,
			{typ: plumbing.OFSDeltaObject, size: 6, dist: blobLen, data: leb(leb(nil, 1<<33), 10)}},
			[]string{"delta at offset", fmt.Sprint(1 << 33)}},
		{"whole object longer than declared", false, []packEntrySpec{
			{typ: plumbing.BlobObject, size: 10, data: make([]byte, 10<<20)}},
			[]string{"object at offset 12", "more than the 10 bytes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hdr := "# v2 git bundle\n"
			target := emptyTarget(t)
			if tt.prereq {
				hdr += "-" + prereqHead.String() + " part 1\n"
				var full bytes.Buffer
				if _, err := prereq.WriteBundle(context.Background(), &full, BundleOptions{}); err != nil {
					t.Fatal(err)
				}
				if _, err := target.ReadBundle(context.Background(), &full); err != nil {
					t.Fatal(err)
				}
			}
			before := countObjects(t, target)
			data := append([]byte(hdr+some+" refs/heads/main\n\n"), handPack(t, tt.entries)...)
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			_, err := target.ReadBundle(context.Background(), bytes.NewReader(data))
			runtime.ReadMemStats(&m1)
			if !errors.Is(err, ErrCorruptBundle) {
				t.Fatalf("err = %v, want %v", err, ErrCorruptBundle)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > 32<<20 {
				t.Errorf("refusing the bundle allocated %d MB", alloc>>20)
			}
			if n := countObjects(t, target); n != before {
				t.Errorf("%d objects stored from a refused bundle", n-before)
			}
		})
	}
}

// TestBombBelowLimitIsBuilt: the limit is what stops a bomb, not
// something else: the same delta declaring a result just under
// maxDeltaObject is built and stored.
func TestBombBelowLimitIsBuilt(t *testing.T) {
	base := make([]byte, 64<<10)
	blob := packEntrySpec{typ: plumbing.BlobObject, size: len(base), data: base}
	blobLen := int64(len(handPack(t, []packEntrySpec{blob})) - 12 - 20)
	const size = maxDeltaObject - 64<<10
	delta := bombDelta(size)
	want := plumbing.ComputeHash(plumbing.BlobObject, make([]byte, size))
	data := append([]byte("# v2 git bundle\n"+want.String()+" refs/heads/main\n\n"), handPack(t, []packEntrySpec{blob,
		{typ: plumbing.OFSDeltaObject, size: len(delta), dist: blobLen, data: delta}})...)
	target := emptyTarget(t)
	if _, err := target.ReadBundle(context.Background(), bytes.NewReader(data)); err != nil {
		// The ref names a blob, which the bundle does hold: only a
		// commit check could fail, and there is none here.
		t.Fatal(err)
	}
	if err := target.st.HasEncodedObject(want); err != nil {
		t.Fatalf("the %d-byte result is not stored: %v", size, err)
	}
}
