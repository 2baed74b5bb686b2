package evalbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/sandbox/disk"
)

// Room is the context every untrusted tree is scored in: one definition,
// the same for ground truth during a run, the agent's run_tests, `traj
// replay evaluate` and a cluster's evaluation tasks, so an artifact gets
// one result wherever it is scored and a result cached under its key is
// the one it gets anywhere. What the tree's code can observe of its room
// is fixed by it: priority (nice), memory, CPU and process limits, the
// scratch space's size, the paths inside (/workspace, /case, /run/program,
// the scratch image's own layout: no host path is on any command line it
// can read, bwrap's included) and the environment (sandbox.Actions: fixed
// variables, none of the host's).
type Room struct {
	// Limits bound one evaluation's actions: all of them together under
	// bwrap (one cgroup), each under container.
	Limits sandbox.Limits
	// Disk caps the evaluation's scratch space: a sparse ext4 image
	// (sandbox/disk) holding the tree and its second build, the
	// artifacts, every case's folder and the actions' own files. A build
	// writing more gets ENOSPC; the host's disk grows by at most Disk.
	Disk int64
	// ArtifactBytes caps the size of the build's artifacts (their
	// apparent size, holes included): above it the build fails with a
	// clear error. Artifacts are copied sparse.
	ArtifactBytes int64
	// Nice is the actions' CPU priority: low, so the agent and the
	// recorder come first, and the same for every evaluation.
	Nice int
}

// StandardRoom is the one evaluation context (see Room). Its numbers: 2
// GiB of memory and 2 CPUs (ground truth's share of the default agent
// sandbox, 4 GiB, split between the run's 2 evaluation slots), 4096
// processes, 2 GiB of scratch (the default --disk, 4 GiB, split the same
// way), 512 MiB of artifacts, nice 10.
func StandardRoom() Room {
	return Room{
		Limits:        sandbox.Limits{Memory: 2 << 30, CPUs: 2, Processes: sandbox.DefaultProcesses},
		Disk:          2 << 30,
		ArtifactBytes: 512 << 20,
		Nice:          10,
	}
}

// Names inside the scratch space: fixed, so what a compile can read of
// its mounts (/proc/self/mountinfo shows a bind's path inside its
// filesystem) is the same in every evaluation.
const (
	scratchTree  = "tree"
	scratchAgain = "again"
	scratchArt   = "artifacts"
	scratchArt2  = "artifacts-again"
	scratchCases = "cases"
	scratchActs  = "actions"
)

// scratch is an evaluation's scratch space: dir, a fresh capped image
// mounted there (capped false where none can be mounted: not root, no
// loop device; the reason is in why).
type scratch struct {
	base   string
	dir    string
	capped bool
	why    string
}

// openScratch makes the scratch space of one evaluation below tempDir
// (os.TempDir when empty): an image of size bytes mounted at a folder of
// its own. Where no image can be mounted it is a plain folder, uncapped,
// and says why.
func openScratch(ctx context.Context, tempDir string, size int64) (*scratch, error) {
	base, err := os.MkdirTemp(tempDir, "traj-room-")
	if err != nil {
		return nil, fmt.Errorf("evaluation scratch space: %w", err)
	}
	s := &scratch{base: base, dir: filepath.Join(base, "room")}
	if err := disk.Available(); err != nil {
		s.why = err.Error()
		if err := os.Mkdir(s.dir, 0o700); err != nil {
			os.RemoveAll(base)
			return nil, fmt.Errorf("evaluation scratch space: %w", err)
		}
		return s, nil
	}
	img := filepath.Join(base, "room.img")
	if err := disk.Create(ctx, img, size); err != nil {
		os.RemoveAll(base)
		return nil, fmt.Errorf("evaluation scratch space: %w", err)
	}
	if err := disk.Attach(ctx, img, s.dir); err != nil {
		os.RemoveAll(base)
		return nil, fmt.Errorf("evaluation scratch space: %w", err)
	}
	if err := os.Chmod(s.dir, 0o700); err != nil {
		s.close()
		return nil, fmt.Errorf("evaluation scratch space: %w", err)
	}
	s.capped = true
	return s, nil
}

// image is the scratch space's image file ("" when uncapped).
func (s *scratch) image() string {
	if !s.capped {
		return ""
	}
	return filepath.Join(s.base, "room.img")
}

// path is name inside the scratch space.
func (s *scratch) path(name string) string { return filepath.Join(s.dir, name) }

// close unmounts the image and removes everything.
func (s *scratch) close() error {
	var err error
	if s.capped {
		err = disk.Unmount(s.dir)
	}
	if err == nil {
		err = os.RemoveAll(s.base)
	}
	if err != nil {
		return fmt.Errorf("remove the evaluation scratch space: %w", err)
	}
	return nil
}
