package orchestrator

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/gitstate"
	"github.com/trajlab/traj/trace/store"
)

// Enqueuer accepts objects for asynchronous upload (*upload.Uploader).
type Enqueuer interface {
	Enqueue(key string, src store.Source) error
}

// HistoryPublisher makes each recorded part durable beyond the local trace: when
// the part made a commit, it writes the incremental history bundle
// (history/<part>.bundle, commits since the last bundled one) into the
// trajectory folder and hands it to the uploader. Trace chunks reach the
// uploader through the trace writer's OnChunk callback. Nothing here waits
// for the network.
type HistoryPublisher struct {
	id   string
	dir  string
	repo *gitstate.Repo
	up   Enqueuer // nil when the trajectory folder is the store
	log  *slog.Logger
	// lastBundled is the newest commit already in a history bundle ("" =
	// none: the first bundle holds the whole history).
	lastBundled string
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

// PartRecorded implements Publisher.
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

// finalBundle writes and enqueues the history bundle of the final
// checkpoint, made after part (the last counted one). It has its own name,
// <part>.final.bundle, which sorts after part's bundle and before the next
// part's (a resumed run), so it never replaces the last part's bundle and
// the chain stays complete.
func (p *HistoryPublisher) finalBundle(ctx context.Context, part int, commit string) error {
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
