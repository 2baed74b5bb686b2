package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/trajlab/traj/orchestrator/batch"
)

// Slurm executor: one `sbatch --array` job per submission, whose task i
// runs `traj experiment task SPEC --cells FILE` for the i-th cell listed in
// FILE (SLURM_ARRAY_TASK_ID picks the line). A task advances its slot
// exactly as the local executor does (start, resume, relaunch), each
// trajectory being its own `traj run` process writing into the shared
// store. Submissions are recorded in <work>/experiments/<name>/slurm.json
// so status and the next submission can ask squeue about them.

// Submission is one sbatch array job: batch's record, and the cells its
// tasks run.
type Submission struct {
	batch.Submission
	// Cells maps array index → cell index.
	Cells []int `json:"cells"`
	// CellsFile is the file the tasks read their cell from.
	CellsFile string `json:"cells_file"`
}

func submissionsPath(w *Where, s *Spec) string {
	return filepath.Join(w.LocalDir(s.Name), "slurm.json")
}

// Submissions reads the experiment's recorded sbatch submissions.
func Submissions(w *Where, s *Spec) ([]Submission, error) {
	return batch.Read[Submission](submissionsPath(w, s))
}

// QueueState is the scheduler's state of each cell that has a queued or
// running array task, by cell index (PENDING, RUNNING, …).
func QueueState(ctx context.Context, w *Where, s *Spec) (map[int]string, error) {
	subs, err := Submissions(w, s)
	if err != nil || len(subs) == 0 {
		return map[int]string{}, err
	}
	byJob := map[string]Submission{}
	var ids []string
	for _, sub := range subs {
		byJob[sub.JobID] = sub
		ids = append(ids, sub.JobID)
	}
	queued, err := batch.ArrayStates(ctx, ids)
	if err != nil {
		return nil, err
	}
	states := map[int]string{}
	for job, tasks := range queued {
		sub := byJob[job]
		for i, state := range tasks {
			if i >= 0 && i < len(sub.Cells) {
				states[sub.Cells[i]] = state
			}
		}
	}
	return states, nil
}

// SubmitSlurm submits one array job for the slots that need work and are
// not queued or running already, and records it. It returns nil when
// nothing needs work. The spec, the store and the traj binary must be
// reachable from the compute nodes (a shared folder).
func SubmitSlurm(ctx context.Context, r *Runner, slots []*Slot, storeOverride string) (*Submission, error) {
	s, w := r.Spec, r.Where
	queued, err := QueueState(ctx, w, s)
	if err != nil {
		return nil, err
	}
	var cells []int
	for _, slot := range slots {
		switch slot.Next {
		case ActStart, ActResume, ActRetry:
			if _, busy := queued[slot.Cell.Index]; !busy {
				cells = append(cells, slot.Cell.Index)
			}
		}
	}
	if len(cells) == 0 {
		return nil, nil
	}
	dir := filepath.Join(w.LocalDir(s.Name), "slurm")
	logs := filepath.Join(w.LocalDir(s.Name), "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return nil, fmt.Errorf("make slurm folder: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("make slurm folder: %w", err)
	}
	tag := time.Now().UTC().Format("20060102-150405.000000")
	cellsFile := filepath.Join(dir, tag+".cells")
	var lines strings.Builder
	for _, c := range cells {
		fmt.Fprintln(&lines, c)
	}
	if err := os.WriteFile(cellsFile, []byte(lines.String()), 0o644); err != nil {
		return nil, fmt.Errorf("write cells file: %w", err)
	}
	specPath, err := filepath.Abs(s.Path)
	if err != nil {
		return nil, err
	}
	taskArgs := []string{r.TrajBin, "experiment", "task", specPath, "--cells", cellsFile}
	if storeOverride != "" {
		taskArgs = append(taskArgs, "--store", storeOverride)
	}
	cwd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	bsub, err := batch.Submit(ctx, batch.Array{Executor: batch.Slurm, Name: "traj-" + s.Name, Tasks: len(cells), Command: taskArgs,
		About: "traj experiment " + s.Name + ": one trajectory slot per array task",
		Slurm: batch.SlurmOptions{Dir: dir, Script: tag + ".sh", Log: filepath.Join(logs, "slurm-%A_%a.out"), Chdir: cwd,
			MaxActive: s.Slurm.MaxActive, Options: SbatchResources(s)}}, nil)
	if err != nil {
		return nil, err
	}
	sub := &Submission{Submission: bsub, Cells: cells, CellsFile: cellsFile}
	if err := batch.Append(submissionsPath(w, s), *sub); err != nil {
		return sub, fmt.Errorf("record submission %s: %w", sub.JobID, err)
	}
	return sub, nil
}

// SbatchResources are the sbatch options for one task from the spec's
// limits and slurm settings.
func SbatchResources(s *Spec) []string {
	var args []string
	if s.Limits.CPUs > 0 {
		args = append(args, "--cpus-per-task="+strconv.Itoa(s.Limits.CPUs))
	}
	if s.Limits.Memory != "" {
		if m, err := ParseMemory(s.Limits.Memory); err == nil {
			args = append(args, fmt.Sprintf("--mem=%dM", max(m>>20, 1)))
		}
	}
	if s.Slurm.Time != "" {
		args = append(args, "--time="+s.Slurm.Time)
	} else if d := s.Timeout(); d > 0 {
		// The budget plus time to finish (final checkpoint, uploads).
		args = append(args, fmt.Sprintf("--time=%d", int((d+15*time.Minute).Minutes())))
	}
	if s.Slurm.Partition != "" {
		args = append(args, "--partition="+s.Slurm.Partition)
	}
	if s.Slurm.Account != "" {
		args = append(args, "--account="+s.Slurm.Account)
	}
	return append(args, s.Slurm.Args...)
}

// Slots inspects every cell's slot.
func Slots(ctx context.Context, w *Where, s *Spec) ([]*Slot, error) {
	var slots []*Slot
	for _, cell := range s.Cells() {
		slot, err := Inspect(ctx, w, s, cell)
		if err != nil {
			return nil, err
		}
		slots = append(slots, slot)
	}
	return slots, nil
}

// WriteQueue writes to out the scheduler's view of the cells queued or
// running, when the experiment went to Slurm; a queue that cannot be read
// is a line on errOut, not an error (the store's view still shows).
func WriteQueue(ctx context.Context, out, errOut io.Writer, w *Where, s *Spec, slots []*Slot) error {
	subs, err := Submissions(w, s)
	if err != nil || len(subs) == 0 {
		return err
	}
	q, err := QueueState(ctx, w, s)
	if err != nil {
		fmt.Fprintf(errOut, "traj: slurm queue unavailable: %v\n", err)
		return nil
	}
	fmt.Fprintf(out, "slurm: %d submissions (last job %s), %d tasks queued or running\n", len(subs), subs[len(subs)-1].JobID, len(q))
	for _, slot := range slots {
		if st, ok := q[slot.Cell.Index]; ok {
			fmt.Fprintf(out, "  %s\t%s\n", slot.Cell.ID, st)
		}
	}
	return nil
}

// TaskCell is the cell an array task runs: the task's index (index < 0:
// SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX from getenv), through
// cellsFile's lines when given (Slurm).
func TaskCell(s *Spec, cellsFile string, index int, getenv func(string) string) (Cell, error) {
	if index < 0 {
		i, ok, err := batch.TaskIndex(getenv)
		if err != nil {
			return Cell{}, err
		}
		if !ok {
			return Cell{}, errors.New("no task index: give --index, or run as a Slurm array task or an Indexed Job pod")
		}
		index = i
	}
	if cellsFile != "" {
		var err error
		if index, err = CellOfTask(cellsFile, index); err != nil {
			return Cell{}, err
		}
	}
	cells := s.Cells()
	if index < 0 || index >= len(cells) {
		return Cell{}, fmt.Errorf("cell %d: the spec has %d", index, len(cells))
	}
	return cells[index], nil
}

// CellOfTask is the cell an array task runs: line index of cellsFile.
func CellOfTask(cellsFile string, index int) (int, error) {
	b, err := os.ReadFile(cellsFile)
	if err != nil {
		return 0, fmt.Errorf("read cells file: %w", err)
	}
	lines := strings.Fields(string(b))
	if index < 0 || index >= len(lines) {
		return 0, fmt.Errorf("task index %d: %s lists %d cells", index, cellsFile, len(lines))
	}
	return strconv.Atoi(lines[index])
}
