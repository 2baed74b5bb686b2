package gitstate

import (
	"bytes"
	"context"
	"crypto/sha1"
	"errors"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// FuzzReadBundle feeds arbitrary bytes to the bundle reader (header and
// pack): it must never panic or hang, every error must wrap one of the
// package's bundle errors, and a bundle it accepts must have stored the
// objects its refs name. Each input is read twice: as it is, and with its
// pack's SHA-1 trailer recomputed, so that mutations inside the pack reach
// the pack indexer instead of stopping at the checksum.
func FuzzReadBundle(f *testing.F) {
	r := populatedAt(f, f.TempDir())
	var full, inc bytes.Buffer
	if _, err := r.WriteBundle(context.Background(), &full, BundleOptions{}); err != nil {
		f.Fatal(err)
	}
	parent, err := r.Head()
	if err != nil {
		f.Fatal(err)
	}
	writeFile(f, r.Dir(), "src/lib.rs", "pub fn lib() -> i32 { 42 }\n", 0o644)
	mustCheckpoint(f, r, 99)
	if _, err := r.WriteHistoryBundle(context.Background(), &inc, parent); err != nil {
		f.Fatal(err)
	}
	f.Add(full.Bytes())
	f.Add(inc.Bytes())
	f.Add([]byte("# v2 git bundle\n"))
	f.Add([]byte("# v3 git bundle\n@object-format=sha1\n" + parent.String() + " HEAD\n\nPACK\x00\x00\x00\x02\x00\x00\x00\x00"))
	// A whole blob and a delta against it (a small cousin of the bombs in
	// TestDeltaBombRefused), so mutations reach delta resolution.
	base := bytes.Repeat([]byte("0123456789abcdef"), 4<<10)
	blob := packEntrySpec{typ: plumbing.BlobObject, size: len(base), data: base}
	delta := bombDelta(128 << 10)
	pack := handPack(f, []packEntrySpec{blob, {typ: plumbing.OFSDeltaObject, size: len(delta), dist: int64(len(handPack(f, []packEntrySpec{blob})) - 32), data: delta}})
	f.Add(append([]byte("# v2 git bundle\n"+plumbing.ComputeHash(plumbing.BlobObject, base).String()+" refs/heads/main\n\n"), pack...))
	bundleErrs := []error{ErrNotBundle, ErrUnsupportedBundle, ErrTruncatedBundle, ErrCorruptBundle, ErrMissingPrerequisite}
	read := func(t *testing.T, data []byte) {
		target := emptyTarget(t)
		hdr, err := target.ReadBundle(context.Background(), bytes.NewReader(data))
		if err != nil {
			for _, e := range bundleErrs {
				if errors.Is(err, e) {
					return
				}
			}
			t.Fatalf("error wraps no bundle error: %v", err)
		}
		for _, ref := range hdr.Refs {
			if target.st.HasEncodedObject(ref.Hash) != nil {
				t.Fatalf("accepted bundle lacks %s %s", ref.Name, ref.Hash)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		read(t, data)
		if i := bytes.Index(data, []byte("\n\nPACK")); i >= 0 && len(data) >= i+2+12+sha1.Size {
			fixed := bytes.Clone(data)
			sum := sha1.Sum(fixed[i+2 : len(fixed)-sha1.Size])
			copy(fixed[len(fixed)-sha1.Size:], sum[:])
			read(t, fixed)
		}
	})
}
