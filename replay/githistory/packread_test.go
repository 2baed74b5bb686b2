package githistory

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"

	"github.com/trajlab/traj/replay/replaytest"
)

// TestPatchDelta: patchDelta rebuilds what go-git's DiffDelta encoded, and
// refuses deltas that are cut, name another base size or copy from
// outside the base.
func TestPatchDelta(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		base := make([]byte, rng.IntN(5000))
		for j := range base {
			base[j] = byte('a' + rng.IntN(4))
		}
		target := append([]byte(nil), base...)
		for range rng.IntN(5) {
			at := rng.IntN(len(target) + 1)
			ins := bytes.Repeat([]byte{byte('A' + rng.IntN(26))}, rng.IntN(300))
			target = append(target[:at], append(ins, target[at:]...)...)
			if cut := rng.IntN(len(target) + 1); cut < len(target) {
				target = append(target[:cut], target[min(len(target), cut+rng.IntN(200)):]...)
			}
		}
		delta := packfile.DiffDelta(base, target)
		got, err := patchDelta(base, delta)
		if err != nil || !bytes.Equal(got, target) {
			t.Fatalf("case %d: patchDelta: %v (equal %v)", i, err, bytes.Equal(got, target))
		}
		if len(delta) > 4 {
			if _, err := patchDelta(base, delta[:len(delta)-1]); err == nil {
				t.Fatalf("case %d: a cut delta was applied", i)
			}
		}
		if _, err := patchDelta(append(base, 'x'), delta); err == nil {
			t.Fatalf("case %d: a delta for another base size was applied", i)
		}
	}
	// Copy 16 bytes from offset 10 of a 12-byte base.
	if _, err := patchDelta(make([]byte, 12), []byte{12, 16, 0x80 | 0x01 | 0x10, 10, 16}); err == nil {
		t.Fatal("a copy from outside the base was applied")
	}
}

// TestPackObjectsMatchGoGit: every object of a trajectory's bundle read
// by packObjects (deltas resolved against its own cache, kept small here
// so bases are dropped and resolved again) is what go-git reads.
func TestPackObjectsMatchGoGit(t *testing.T) {
	var changes []replaytest.Change
	lines := make([]string, 300)
	for i := range lines {
		lines[i] = fmt.Sprintf("int f%d(void) { return %d; }\n", i, i)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for part := range 60 {
		lines[rng.IntN(len(lines))] = fmt.Sprintf("int g%d(void) { return 0; }\n", part)
		changes = append(changes, replaytest.Change{Write: map[string]string{
			"src/main.c":                         strings.Join(lines, ""),
			fmt.Sprintf("src/file_%03d.c", part): "int x;\n",
		}})
	}
	tj := replaytest.BuildSpec(t, replaytest.Spec{ID: "packed", Changes: changes, TurnSize: 5})
	h, err := Open(context.Background(), tj.BundlePath)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	r, err := h.get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer h.put(r)
	po, err := openPackObjects(r.GitDir())
	if err != nil {
		t.Fatal(err)
	}
	defer po.Close()
	po.limit = 4096 // bases are dropped and resolved again
	if len(po.packs) == 0 {
		t.Fatal("no pack")
	}
	iter, err := po.packs[0].idx.Entries()
	if err != nil {
		t.Fatal(err)
	}
	objects, deltas := 0, 0
	for {
		e, err := iter.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var hdr [1]byte
		po.packs[0].f.ReadAt(hdr[:], int64(e.Offset))
		if typ := plumbing.ObjectType(hdr[0] >> 4 & 7); typ == plumbing.OFSDeltaObject || typ == plumbing.REFDeltaObject {
			deltas++
		}
		typ, data, found, err := po.read(e.Hash)
		if err != nil || !found {
			t.Fatalf("%s: found %v, %v", e.Hash, found, err)
		}
		obj, err := r.Storage().EncodedObject(plumbing.AnyObject, e.Hash)
		if err != nil {
			t.Fatal(err)
		}
		rd, _ := obj.Reader()
		want, _ := io.ReadAll(rd)
		rd.Close()
		if typ != obj.Type() || !bytes.Equal(data, want) {
			t.Fatalf("%s: %s of %d bytes, go-git reads a %s of %d", e.Hash, typ, len(data), obj.Type(), len(want))
		}
		objects++
	}
	if deltas < 20 {
		t.Fatalf("%d of %d objects are deltas: the pack does not exercise them", deltas, objects)
	}
	t.Logf("%d objects, %d deltas", objects, deltas)
}
