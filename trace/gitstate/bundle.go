package gitstate

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"
)

// Bundle errors. Each error a reader returns wraps one of these.
var (
	// ErrNotBundle: the data does not start with a git bundle signature.
	ErrNotBundle = errors.New("not a git bundle")
	// ErrUnsupportedBundle: a bundle version or capability traj does not read
	// (for example @object-format=sha256 or @filter).
	ErrUnsupportedBundle = errors.New("unsupported git bundle")
	// ErrTruncatedBundle: the data ends before the header or the pack does.
	ErrTruncatedBundle = errors.New("truncated git bundle")
	// ErrCorruptBundle: a malformed header line, a pack checksum mismatch,
	// or a pack that does not hold the objects its header promises.
	ErrCorruptBundle = errors.New("corrupt git bundle")
	// ErrMissingPrerequisite: the target lacks a commit the bundle needs.
	ErrMissingPrerequisite = errors.New("git bundle prerequisite missing")
	// ErrEmptyBundle: there is no ref to bundle.
	ErrEmptyBundle = errors.New("no refs to bundle")
)

const (
	bundleV2 = "# v2 git bundle\n"
	bundleV3 = "# v3 git bundle\n"
	// maxHeaderLine bounds one header line so garbage input cannot make
	// the reader buffer without limit.
	maxHeaderLine = 64 << 10
)

// BundlePrerequisite is a commit a bundle's reader must already have.
type BundlePrerequisite struct {
	Hash    plumbing.Hash
	Comment string
}

// BundleRef is one ref a bundle carries.
type BundleRef struct {
	Name plumbing.ReferenceName
	Hash plumbing.Hash
}

// BundleHeader is what a bundle says before its pack.
type BundleHeader struct {
	Version       int
	Prerequisites []BundlePrerequisite
	Refs          []BundleRef
}

// RefMap returns the refs by name.
func (h *BundleHeader) RefMap() map[plumbing.ReferenceName]plumbing.Hash {
	m := make(map[plumbing.ReferenceName]plumbing.Hash, len(h.Refs))
	for _, r := range h.Refs {
		m[r.Name] = r.Hash
	}
	return m
}

// BundleOptions select what a bundle leaves out.
type BundleOptions struct {
	// Prerequisites are commits the reader already has: their history and
	// every object of their trees are left out, and each becomes a
	// "-<sha>" line. Empty makes a full bundle.
	Prerequisites []plumbing.Hash
}

// WriteBundle writes a v2 bundle of every ref of the repository, HEAD
// included.
func (r *Repo) WriteBundle(ctx context.Context, w io.Writer, opts BundleOptions) (*BundleHeader, error) {
	return WriteBundle(ctx, r.st, w, opts)
}

// WriteBundle writes a v2 bundle of every ref in st (HEAD included) that
// `git bundle verify` and `git clone` accept.
func WriteBundle(ctx context.Context, st storer.Storer, w io.Writer, opts BundleOptions) (*BundleHeader, error) {
	h, err := writeBundle(ctx, st, w, opts)
	if err != nil {
		return nil, fmt.Errorf("write bundle: %w", err)
	}
	return h, nil
}

func writeBundle(ctx context.Context, st storer.Storer, w io.Writer, opts BundleOptions) (*BundleHeader, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	hdr := &BundleHeader{Version: 2}
	refs, err := bundleRefs(st)
	if err != nil {
		return nil, err
	}
	if len(refs) == 0 {
		return nil, ErrEmptyBundle
	}
	hdr.Refs = refs
	for _, p := range opts.Prerequisites {
		c, err := object.GetCommit(st, p)
		if err != nil {
			return nil, fmt.Errorf("prerequisite %s: %w: %w", p, ErrUnknownCommit, err)
		}
		subject, _, _ := strings.Cut(strings.TrimSpace(c.Message), "\n")
		hdr.Prerequisites = append(hdr.Prerequisites, BundlePrerequisite{Hash: p, Comment: subject})
	}
	items, err := bundleObjects(ctx, st, refs, opts.Prerequisites)
	if err != nil {
		return nil, err
	}

	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString(bundleV2)
	for _, p := range hdr.Prerequisites {
		fmt.Fprintf(bw, "-%s %s\n", p.Hash, p.Comment)
	}
	for _, r := range hdr.Refs {
		fmt.Fprintf(bw, "%s %s\n", r.Hash, r.Name)
	}
	bw.WriteString("\n")
	if len(opts.Prerequisites) > 0 {
		// Incremental: few objects, best stored as deltas against the
		// prerequisite's versions.
		if err := writeThinPack(ctx, st, bw, items); err != nil {
			return nil, fmt.Errorf("encode thin pack: %w", err)
		}
	} else if err := writeFullPack(ctx, st, bw, items); err != nil {
		return nil, fmt.Errorf("encode pack: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return nil, err
	}
	return hdr, nil
}

// bundleRefs lists HEAD (resolved) and then every ref under refs/ by name.
func bundleRefs(st storer.ReferenceStorer) ([]BundleRef, error) {
	var refs []BundleRef
	iter, err := st.IterReferences()
	if err != nil {
		return nil, fmt.Errorf("list refs: %w", err)
	}
	err = iter.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() == plumbing.HashReference && strings.HasPrefix(ref.Name().String(), "refs/") {
			refs = append(refs, BundleRef{Name: ref.Name(), Hash: ref.Hash()})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list refs: %w", err)
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].Name < refs[j].Name })
	if head, err := storer.ResolveReference(st, plumbing.HEAD); err == nil {
		refs = append([]BundleRef{{Name: plumbing.HEAD, Hash: head.Hash()}}, refs...)
	}
	return refs, nil
}

// bundleObjects lists the objects reachable from the refs but not from the
// prerequisites: commits down to a prerequisite, and their trees and blobs
// minus everything in the prerequisites' trees. It reads only the commits
// after the prerequisites and their trees, so an incremental bundle costs
// what changed, not the whole history. Each tree or blob comes with the
// object at its path in the first prerequisite's tree, as a delta base.
func bundleObjects(ctx context.Context, st storer.EncodedObjectStorer, refs []BundleRef, prereqs []plumbing.Hash) ([]packItem, error) {
	have := map[plumbing.Hash]bool{}
	stop := map[plumbing.Hash]bool{}
	bases := map[string]plumbing.Hash{}
	for i, p := range prereqs {
		stop[p] = true
		c, err := object.GetCommit(st, p)
		if err != nil {
			return nil, fmt.Errorf("read prerequisite %s: %w", p, err)
		}
		err = walkTree(ctx, st, c.TreeHash, "", have, func(h plumbing.Hash, path string) {
			if i == 0 {
				bases[path] = h
			}
		})
		if err != nil {
			return nil, err
		}
	}
	var out []packItem
	add := func(h plumbing.Hash, path string) {
		out = append(out, packItem{hash: h, base: bases[path], path: path, tree: true})
	}
	seen := map[plumbing.Hash]bool{}
	var queue []plumbing.Hash
	for _, r := range refs {
		queue = append(queue, r.Hash)
	}
	for len(queue) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		h := queue[0]
		queue = queue[1:]
		if stop[h] || seen[h] {
			continue
		}
		seen[h] = true
		obj, err := st.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", h, err)
		}
		switch obj.Type() {
		case plumbing.CommitObject:
			c, err := object.DecodeCommit(st, obj)
			if err != nil {
				return nil, fmt.Errorf("decode commit %s: %w", h, err)
			}
			out = append(out, packItem{hash: h, commit: true})
			if err := walkTree(ctx, st, c.TreeHash, "", have, add); err != nil {
				return nil, err
			}
			queue = append(queue, c.ParentHashes...)
		case plumbing.TagObject:
			t, err := object.DecodeTag(st, obj)
			if err != nil {
				return nil, fmt.Errorf("decode tag %s: %w", h, err)
			}
			out = append(out, packItem{hash: h})
			queue = append(queue, t.Target)
		case plumbing.TreeObject:
			if err := walkTree(ctx, st, h, "", have, add); err != nil {
				return nil, err
			}
		default:
			if !have[h] {
				have[h] = true
				out = append(out, packItem{hash: h})
			}
		}
	}
	return out, nil
}

// walkTree visits the tree at path and everything below it not yet in
// have, adding each to have. Subtrees already in have are skipped whole.
func walkTree(ctx context.Context, st storer.EncodedObjectStorer, h plumbing.Hash, path string, have map[plumbing.Hash]bool, visit func(h plumbing.Hash, path string)) error {
	if have[h] {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	have[h] = true
	visit(h, path)
	t, err := object.GetTree(st, h)
	if err != nil {
		return fmt.Errorf("read tree %s: %w", h, err)
	}
	for _, e := range t.Entries {
		p := e.Name
		if path != "" {
			p = path + "/" + e.Name
		}
		switch {
		case e.Mode == filemode.Submodule:
			// a gitlink names a commit of another repository: not ours to carry
		case e.Mode == filemode.Dir:
			if err := walkTree(ctx, st, e.Hash, p, have, visit); err != nil {
				return err
			}
		case !have[e.Hash]:
			have[e.Hash] = true
			visit(e.Hash, p)
		}
	}
	return nil
}

// ReadBundleHeader reads a bundle's header and leaves br at its pack.
func ReadBundleHeader(br *bufio.Reader) (*BundleHeader, error) {
	line, err := readHeaderLine(br)
	if err != nil {
		if errors.Is(err, ErrTruncatedBundle) && line == "" {
			return nil, fmt.Errorf("%w: empty input", ErrNotBundle)
		}
		return nil, err
	}
	hdr := &BundleHeader{}
	switch line + "\n" {
	case bundleV2:
		hdr.Version = 2
	case bundleV3:
		hdr.Version = 3
	default:
		return nil, fmt.Errorf("%w: signature %.40q", ErrNotBundle, line)
	}
	for {
		line, err := readHeaderLine(br)
		if err != nil {
			return nil, err
		}
		switch {
		case line == "":
			return hdr, nil
		case hdr.Version == 3 && strings.HasPrefix(line, "@"):
			if line != "@object-format=sha1" {
				return nil, fmt.Errorf("%w: capability %q", ErrUnsupportedBundle, line)
			}
		case strings.HasPrefix(line, "-"):
			hexs, comment, _ := strings.Cut(line[1:], " ")
			h, ok := parseHash(hexs)
			if !ok {
				return nil, fmt.Errorf("%w: prerequisite line %.80q", ErrCorruptBundle, line)
			}
			hdr.Prerequisites = append(hdr.Prerequisites, BundlePrerequisite{Hash: h, Comment: comment})
		default:
			hexs, name, ok := strings.Cut(line, " ")
			h, okHash := parseHash(hexs)
			if !ok || !okHash || (name != "HEAD" && !strings.HasPrefix(name, "refs/")) || strings.Contains(name, "..") {
				return nil, fmt.Errorf("%w: ref line %.80q", ErrCorruptBundle, line)
			}
			hdr.Refs = append(hdr.Refs, BundleRef{Name: plumbing.ReferenceName(name), Hash: h})
		}
	}
}

func readHeaderLine(br *bufio.Reader) (string, error) {
	var b []byte
	for {
		chunk, err := br.ReadSlice('\n')
		b = append(b, chunk...)
		if len(b) > maxHeaderLine {
			return "", fmt.Errorf("%w: header line longer than %d bytes", ErrCorruptBundle, maxHeaderLine)
		}
		switch {
		case err == nil:
			return string(b[:len(b)-1]), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return string(b), fmt.Errorf("%w: header ends early", ErrTruncatedBundle)
		default:
			return "", fmt.Errorf("read bundle header: %w", err)
		}
	}
}

func parseHash(s string) (plumbing.Hash, bool) {
	if len(s) != 40 {
		return plumbing.ZeroHash, false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return plumbing.ZeroHash, false
		}
	}
	return plumbing.NewHash(s), true
}

// ReadBundle stores the objects of the bundle read from rd in the
// repository and returns its header; it does not change any ref. Every
// prerequisite must already be there.
//
// Memory stays flat whatever the bundle holds: the pack is streamed into a
// temp file in the repository's objects/pack while its trailing SHA-1 is
// checked, so a truncated or corrupt bundle stores nothing. A full bundle
// (no prerequisites) is then indexed and kept as one pack, as `git clone`
// keeps it; an incremental one is a thin pack (deltas against the
// prerequisite's objects), whose objects are resolved against the
// repository and stored loose. Large objects are never held whole: the
// parser hashes non-delta objects as it streams them and the storage
// reads objects above 1 MB lazily from the pack.
func (r *Repo) ReadBundle(ctx context.Context, rd io.Reader) (*BundleHeader, error) {
	h, err := r.readBundle(ctx, rd)
	if err != nil {
		return nil, fmt.Errorf("read bundle: %w", err)
	}
	return h, nil
}

func (r *Repo) readBundle(ctx context.Context, rd io.Reader) (*BundleHeader, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(rd, 64<<10)
	hdr, err := ReadBundleHeader(br)
	if err != nil {
		return nil, err
	}
	if len(hdr.Refs) == 0 {
		return nil, fmt.Errorf("%w: no refs", ErrCorruptBundle)
	}
	var missing []string
	for _, p := range hdr.Prerequisites {
		if r.st.HasEncodedObject(p.Hash) != nil {
			missing = append(missing, p.Hash.String())
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrMissingPrerequisite, strings.Join(missing, ", "))
	}
	packDir := filepath.Join(r.git, "objects", "pack")
	if err := os.MkdirAll(packDir, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(packDir, "tmp_bundle_")
	if err != nil {
		return nil, err
	}
	defer func() {
		tmp.Close()
		os.Remove(tmp.Name())
	}()
	sum, err := copyPack(ctx, tmp, br)
	if err != nil {
		return nil, err
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	if len(hdr.Prerequisites) > 0 {
		err = r.storeThinPack(ctx, tmp)
	} else {
		err = r.storePack(ctx, tmp, sum)
	}
	switch {
	case err == nil:
	case errors.Is(err, ErrCorruptBundle), errors.Is(err, ErrMissingPrerequisite), ctx.Err() != nil:
		return nil, fmt.Errorf("index pack: %w", err)
	default:
		return nil, fmt.Errorf("%w: index pack: %w", ErrCorruptBundle, err)
	}
	for _, ref := range hdr.Refs {
		if r.st.HasEncodedObject(ref.Hash) != nil {
			return nil, fmt.Errorf("%w: ref %s points to %s, which the pack lacks", ErrCorruptBundle, ref.Name, ref.Hash)
		}
	}
	return hdr, nil
}

// copyPack copies the pack from br into f, checking its signature and
// trailing SHA-1 checksum; it returns the checksum. It tells a cut-off pack
// from a damaged one.
func copyPack(ctx context.Context, f *os.File, br io.Reader) (plumbing.Hash, error) {
	tw := &trailerWriter{w: f, h: sha1.New()}
	if _, err := io.Copy(tw, ctxReader{ctx, br}); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read pack: %w", err)
	}
	if tw.n < 12+sha1.Size {
		return plumbing.ZeroHash, fmt.Errorf("%w: pack of %d bytes", ErrTruncatedBundle, tw.n)
	}
	if string(tw.head[:4]) != "PACK" {
		return plumbing.ZeroHash, fmt.Errorf("%w: pack signature %q", ErrCorruptBundle, tw.head[:4])
	}
	var sum plumbing.Hash
	copy(sum[:], tw.h.Sum(nil))
	if bytes.Equal(sum[:], tw.tail[:]) {
		return sum, nil
	}
	// Scan the objects: running out of data means the pack was cut off.
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return plumbing.ZeroHash, err
	}
	sc := packfile.NewScanner(bufio.NewReader(f))
	_, n, err := sc.Header()
	for i := uint32(0); err == nil && i < n; i++ {
		if _, err = sc.NextObjectHeader(); err == nil {
			_, _, err = sc.NextObject(io.Discard)
		}
	}
	if err == nil {
		_, err = sc.Checksum()
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return plumbing.ZeroHash, fmt.Errorf("%w: pack ends early", ErrTruncatedBundle)
	}
	return plumbing.ZeroHash, fmt.Errorf("%w: pack checksum mismatch", ErrCorruptBundle)
}

// trailerWriter writes everything to w and hashes all but the last 20
// bytes, which it keeps in tail; head keeps the first 4.
type trailerWriter struct {
	w    io.Writer
	h    hash.Hash
	n    int64
	head [4]byte
	tail [sha1.Size]byte
	held int // bytes of tail in use
}

func (t *trailerWriter) Write(p []byte) (int, error) {
	if _, err := t.w.Write(p); err != nil {
		return 0, err
	}
	for i := 0; t.n+int64(i) < 4 && i < len(p); i++ {
		t.head[t.n+int64(i)] = p[i]
	}
	t.n += int64(len(p))
	// Everything but the newest 20 bytes of (tail + p) is body.
	all := len(p) + t.held
	if all <= sha1.Size {
		copy(t.tail[t.held:], p)
		t.held = all
		return len(p), nil
	}
	body := all - sha1.Size
	if body <= t.held {
		t.h.Write(t.tail[:body])
		rest := append(t.tail[body:t.held:t.held], p...)
		copy(t.tail[:], rest)
	} else {
		t.h.Write(t.tail[:t.held])
		t.h.Write(p[:body-t.held])
		copy(t.tail[:], p[body-t.held:])
	}
	t.held = sha1.Size
	return len(p), nil
}

// ctxReader stops a long copy when ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// storePack indexes the complete pack in f and keeps it with its index in
// objects/pack, as git does.
func (r *Repo) storePack(ctx context.Context, f *os.File, sum plumbing.Hash) error {
	p, err := newPackIndex(ctx, f)
	if err != nil {
		return err
	}
	if err := p.scan(); err != nil {
		return err
	}
	if err := p.resolve(); err != nil {
		return err
	}
	base := filepath.Join(r.git, "objects", "pack", "pack-"+sum.String())
	if err := writeFileAtomic(base+".idx", func(w io.Writer) error { return p.writeIdx(w, sum) }); err != nil {
		return err
	}
	if err := os.Link(f.Name(), base+".pack"); err != nil && !os.IsExist(err) {
		return err
	}
	r.st.ObjectStorage.Reindex()
	return nil
}

// storeThinPack stores the objects of the thin pack in f as loose objects,
// resolving deltas against the repository. The pack is checked whole
// first, so a bad one stores nothing; then read again, storing.
func (r *Repo) storeThinPack(ctx context.Context, f *os.File) error {
	external := func(h plumbing.Hash) (plumbing.ObjectType, []byte, error) {
		obj, err := r.st.EncodedObject(plumbing.AnyObject, h)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			return plumbing.InvalidObject, nil, fmt.Errorf("%w: delta base %s is in neither the pack nor the repository", ErrMissingPrerequisite, h)
		}
		if err != nil {
			return plumbing.InvalidObject, nil, fmt.Errorf("read delta base %s: %w", h, err)
		}
		if obj.Size() > maxDeltaObject {
			return plumbing.InvalidObject, nil, fmt.Errorf("%w: object %s (%d bytes) is a delta base, above the %d MiB limit for delta objects", ErrCorruptBundle, h, obj.Size(), maxDeltaObject>>20)
		}
		data, err := objectBytes(obj)
		if err != nil {
			return plumbing.InvalidObject, nil, fmt.Errorf("read delta base %s: %w", h, err)
		}
		return obj.Type(), data, nil
	}
	for _, store := range []bool{false, true} {
		p, err := newPackIndex(ctx, f)
		if err != nil {
			return err
		}
		p.external = external
		if store {
			p.loose = dotgit.New(r.st.Filesystem())
		}
		if err := p.scan(); err != nil {
			return err
		}
		if err := p.resolve(); err != nil {
			return err
		}
	}
	return nil
}
