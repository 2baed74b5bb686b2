package folder

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/atomicfile"
	"github.com/trajlab/traj/trace/gitstate"
	"github.com/trajlab/traj/trace/store"
	"github.com/trajlab/traj/trace/store/chunk"
	"github.com/trajlab/traj/trace/store/ref"
)

// writeIncrementalBundle writes at path the bundle extending a reader that
// holds commit since ("" = nothing: a full bundle) to the current refs.
func writeIncrementalBundle(ctx context.Context, repo *gitstate.Repo, path, since string) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		_, err := repo.WriteHistoryBundle(ctx, w, plumbing.NewHash(since))
		return err
	})
}

// WriteFullBundle writes a git bundle of all refs at path.
func WriteFullBundle(ctx context.Context, repo *gitstate.Repo, path string) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		_, err := repo.WriteBundle(ctx, w, gitstate.BundleOptions{})
		return err
	})
}

// CloneBundles clones the chain of bundle files into dest, checked out at
// commit ("" = the bundles' HEAD).
func CloneBundles(ctx context.Context, dest, commit string, paths []string) (*gitstate.Repo, error) {
	var readers []io.Reader
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		readers = append(readers, f)
	}
	return gitstate.CloneFromBundles(ctx, dest, gitstate.CloneOptions{Commit: commit}, readers...)
}

// LocalHistoryBundles lists the history bundles in the trajectory folder
// dir, in part order.
func LocalHistoryBundles(dir string) []string {
	hist := filepath.Join(dir, filepath.FromSlash(store.HistoryDir))
	entries, _ := os.ReadDir(hist) // none when unreadable: the store is tried next
	var local []string
	for _, e := range entries {
		if e.Type().IsRegular() && store.IsHistoryBundle(e.Name()) {
			local = append(local, filepath.Join(hist, e.Name()))
		}
	}
	sort.Strings(local)
	return local
}

// HistoryBundles returns the trajectory's incremental bundles in part
// order: the local history/ folder's, else those in the store, downloaded
// into tmp (trace/store/ref's HistoryPaths).
func HistoryBundles(ctx context.Context, l *Located, tmp string) ([]string, error) {
	if local := LocalHistoryBundles(l.Dir); len(local) > 0 {
		return local, nil
	}
	t, err := ref.InStore(l.Store, "store "+l.StoreURL, l.ID, ref.Options{CacheDir: tmp})
	if err != nil {
		return nil, err
	}
	paths, err := t.HistoryPaths(ctx)
	if errors.Is(err, ref.ErrNotFound) {
		return nil, fmt.Errorf("no workspace at %s and no history bundles, locally or in the store: %w", l.State.Workspace, fs.ErrNotExist)
	}
	return paths, err
}

// NewestBundled returns the commit the last bundle of a chain brings
// (its first ref), or "" for none.
func NewestBundled(bundles []string) string {
	if len(bundles) == 0 {
		return ""
	}
	f, err := os.Open(bundles[len(bundles)-1])
	if err != nil {
		return ""
	}
	defer f.Close()
	h, err := gitstate.ReadBundleHeader(bufio.NewReader(f))
	if err != nil {
		return ""
	}
	for _, hash := range h.RefMap() {
		return hash.String()
	}
	return ""
}

// Enqueuer accepts objects for asynchronous upload (*upload.Uploader).
type Enqueuer interface {
	Enqueue(key string, src store.Source) error
}

// HistoryPublisher makes what the recorder writes durable beyond the
// local trace: each trace chunk the writer fixed (TraceWritten, handed on
// by whoever wrote: the loop, the start and the finish of a run) goes to
// the uploader as a chunk object (trace/store/chunk); when a part made a
// commit, it writes the incremental history bundle (history/<part>.bundle,
// commits since the last bundled one) into the trajectory folder and
// hands it to the uploader. Nothing here waits for the network.
type HistoryPublisher struct {
	id    string
	dir   string
	repo  *gitstate.Repo
	up    Enqueuer // nil when the trajectory folder is the store
	codec *chunk.Codec
	log   *slog.Logger
	// lastBundled is the newest commit already in a history bundle ("" =
	// none: the first bundle holds the whole history).
	lastBundled string
	// sent is how many bytes of each call record (by file name) went
	// into call chunks.
	sent map[string]int64
}

// NewHistoryPublisher publishes the checkpoints of trajectory id, whose
// local folder is dir, to up (nil: local only). lastBundled is the newest
// commit already bundled ("" for a new trajectory).
func NewHistoryPublisher(id, dir string, repo *gitstate.Repo, up Enqueuer, lastBundled string, log *slog.Logger) *HistoryPublisher {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &HistoryPublisher{id: id, dir: dir, repo: repo, up: up, lastBundled: lastBundled, log: log}
}

// TraceWritten implements engine.Publisher: it enqueues c, a mutation of
// the trace (trace.Writer.Written), as its chunk object. The zero Chunk
// (the call wrote nothing) is skipped; an enqueue that fails (a full
// queue) is logged: the local trace stays the source of truth and the
// final upload sends it whole.
func (p *HistoryPublisher) TraceWritten(c trace.Chunk) {
	if p.up == nil || c.Tail == nil {
		return
	}
	if p.codec == nil {
		codec, err := chunk.NewCodec()
		if err != nil {
			p.log.Warn("upload trace chunk", "err", err)
			return
		}
		p.codec = codec
	}
	if err := p.up.Enqueue(chunk.Key(p.id, c), store.Bytes(p.codec.Encode(c))); err != nil {
		p.log.Warn("upload trace chunk", "err", fmt.Errorf("enqueue trace chunk at offset %d: %w", c.Offset, err))
	}
}

// PartRecorded implements engine.Publisher.
func (p *HistoryPublisher) PartRecorded(ctx context.Context, rec *trace.Part) error {
	if rec.RepoCheckpoint == nil || !rec.RepoCheckpoint.Committed {
		return nil
	}
	return p.bundle(ctx, rec.Part, rec.RepoCheckpoint.CommitAfter)
}

// bundle writes and enqueues the history bundle of the checkpoint at part.
func (p *HistoryPublisher) bundle(ctx context.Context, part int, commit string) error {
	return p.bundleAs(ctx, store.HistoryBundleName(part), part, commit)
}

// FinalBundle writes and enqueues the history bundle of the final
// checkpoint, made after part (the last counted one). It has its own name,
// <part>.final.bundle, which sorts after part's bundle and before the next
// part's (a resumed run), so it never replaces the last part's bundle and
// the chain stays complete.
func (p *HistoryPublisher) FinalBundle(ctx context.Context, part int, commit string) error {
	return p.bundleAs(ctx, fmt.Sprintf("%08d.final.bundle", part), part, commit)
}

func (p *HistoryPublisher) bundleAs(ctx context.Context, name string, part int, commit string) error {
	path := filepath.Join(p.dir, filepath.FromSlash(store.HistoryDir), name)
	if err := writeIncrementalBundle(ctx, p.repo, path, p.lastBundled); err != nil {
		return fmt.Errorf("history bundle of part %d: %w", part, err)
	}
	p.lastBundled = commit
	if p.up != nil {
		if err := p.up.Enqueue(store.HistoryPrefix(p.id)+name, store.File(path)); err != nil {
			return fmt.Errorf("enqueue history bundle of part %d: %w", part, err)
		}
	}
	return nil
}

// TurnEnded hands the uploader what the call records (model_calls.jsonl,
// tool_calls.jsonl) gained since the last turn end: their complete lines
// from the last offset sent, as a call chunk (store.CallChunkKey), so a
// turn end costs what the turn added, never the whole record; a store
// being written by a running trajectory holds them up to the last turn
// (store.LoadRecord puts the chunks back together). The bytes are read
// into memory because the gateways keep appending to the files while the
// upload runs. The final upload sends each record whole, once. A resumed
// run starts again from byte 0 (one chunk overlapping the earlier ones,
// which readers take once).
func (p *HistoryPublisher) TurnEnded() {
	if p.up == nil {
		return
	}
	if p.sent == nil {
		p.sent = map[string]int64{}
	}
	for _, r := range Records(p.dir, p.id) {
		name := filepath.Base(r.Path)
		start := p.sent[name]
		b, err := readFrom(r.Path, start)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			p.log.Warn("read call record", "path", r.Path, "err", err)
			continue
		}
		// Complete lines only: a call being written waits for the next
		// turn end.
		b = b[:bytes.LastIndexByte(b, '\n')+1]
		if len(b) == 0 {
			continue
		}
		end := start + int64(len(b))
		key := store.CallChunkKey(p.id, name, start, end)
		if err := p.up.Enqueue(key, store.Bytes(b)); err != nil {
			p.log.Warn("enqueue call record", "key", key, "err", err)
			continue
		}
		p.sent[name] = end
	}
}

// readFrom reads the file at path from offset off to its end.
func readFrom(path string, off int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil, err
	}
	return io.ReadAll(f)
}
