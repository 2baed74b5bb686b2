// Package evalarray spreads one trajectory's evaluation over a cluster:
// `traj replay evaluate --executor slurm` submits an sbatch array, and
// `--executor kube` writes a Kubernetes Indexed Job, whose task i runs
// `traj replay evaluate-task` (RunTask) on its share of the trees,
// against the store's evaluation cache (replay.Share).
//
// The promises, and what keeps them:
//   - Every tree once: the submitter lists the trees the cache lacks, in
//     plan order, in a trees file every task reads; task i of n takes the
//     trees at positions i, i+n, i+2n… (Mine). The list holds only
//     missing trees, so the shares stay balanced on a resubmission too.
//   - Same keys as a local evaluate: a task opens the same trajectory,
//     plans the same trees and builds the evaluator the same way (the
//     environment's version, the trace's deny_c_compiler), so its cache
//     entries are replay evaluate's, and each tree runs in evalbox's
//     sandboxes as it does locally.
//   - Resumable and idempotent: a task writes each tree to the cache as
//     soon as it is done and skips a tree already there; a killed task
//     loses only its trees in flight, and running the command again
//     submits only the trees still missing (nothing when none is).
//   - Visible: a task that finishes writes task-<i>.json (its counts, its
//     error) into the submission's folder; one that left the queue
//     without it was killed or crashed, and its log is named.
package evalarray

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/trajlab/traj/orchestrator/scheduler"
	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/trace/atomicfile"
)

// TreesName is the trees file of a submission, one tree a line.
const TreesName = "trees"

// WriteTrees writes trees, one a line, to path.
func WriteTrees(path string, trees []string) error {
	return atomicfile.WriteBytes(path, []byte(strings.Join(trees, "\n")+"\n"))
}

// ReadTrees reads a trees file.
func ReadTrees(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read trees file: %w", err)
	}
	return strings.Fields(string(b)), nil
}

// Mine is task index's share of trees among tasks: the trees at
// positions index, index+tasks, …
func Mine(trees []string, tasks, index int) ([]string, error) {
	if tasks <= 0 || index < 0 || index >= tasks {
		return nil, fmt.Errorf("task %d of %d: no such task", index, tasks)
	}
	var out []string
	for i := index; i < len(trees); i += tasks {
		out = append(out, trees[i])
	}
	return out, nil
}

// TaskReport is what a task that finished writes (task-<i>.json).
type TaskReport struct {
	Task int `json:"task"`
	replay.ShareStats
	Error string `json:"error,omitempty"`
}

// ReportPath is task i's report in a submission's folder.
func ReportPath(dir string, i int) string {
	return filepath.Join(dir, "task-"+strconv.Itoa(i)+".json")
}

// LogPath is task i's Slurm log in a submission's folder.
func LogPath(dir string, i int) string {
	return filepath.Join(dir, "task-"+strconv.Itoa(i)+".out")
}

// WriteReport writes a task's report.
func WriteReport(dir string, r TaskReport) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return atomicfile.WriteBytes(ReportPath(dir, r.Task), b)
}

// readReport reads task i's report; ok is false when there is none.
func readReport(dir string, i int) (TaskReport, bool, error) {
	var r TaskReport
	b, err := os.ReadFile(ReportPath(dir, i))
	if errors.Is(err, fs.ErrNotExist) {
		return r, false, nil
	}
	if err == nil {
		err = json.Unmarshal(b, &r)
	}
	if err != nil {
		return r, false, fmt.Errorf("read task report: %w", err)
	}
	return r, true, nil
}

// Submission is one sbatch array of an evaluation.
type Submission struct {
	JobID string `json:"job_id"`
	// Dir holds the trees file, the script, the tasks' logs and reports.
	Dir         string `json:"dir"`
	Tasks       int    `json:"tasks"`
	Trees       int    `json:"trees"`
	SubmittedAt string `json:"submitted_at"`
}

// submissionsName lists a work folder's submissions, oldest first.
const submissionsName = "submissions.json"

// Submissions reads the submissions recorded in work.
func Submissions(work string) ([]Submission, error) {
	b, err := os.ReadFile(filepath.Join(work, submissionsName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	var subs []Submission
	if err == nil {
		err = json.Unmarshal(b, &subs)
	}
	if err != nil {
		return nil, fmt.Errorf("read submissions: %w", err)
	}
	return subs, nil
}

// Slurm is one submission's request.
type Slurm struct {
	// Work is the evaluation's work folder, shared with the nodes.
	Work string
	// Name names the job (the trajectory id).
	Name string
	// Trees are the trees to evaluate, in plan order.
	Trees []string
	// Tasks is the array's size at most (never more than the trees).
	Tasks int
	// TaskArgs is the command a task runs (the traj binary first);
	// "--trees FILE --tasks N --report-dir DIR" are added.
	TaskArgs []string
	// Sbatch are more sbatch options (partition, time, resources).
	Sbatch []string
}

// Submit writes the trees file and script into a new folder under Work,
// submits the array and records it.
func Submit(ctx context.Context, r Slurm) (*Submission, error) {
	if len(r.Trees) == 0 {
		return nil, errors.New("submit: no trees")
	}
	tasks := min(max(r.Tasks, 1), len(r.Trees))
	dir := filepath.Join(r.Work, time.Now().UTC().Format("20060102-150405.000000"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("make submission folder: %w", err)
	}
	trees := filepath.Join(dir, TreesName)
	if err := WriteTrees(trees, r.Trees); err != nil {
		return nil, err
	}
	args := append(append([]string{}, r.TaskArgs...), "--trees", trees, "--tasks", strconv.Itoa(tasks), "--report-dir", dir)
	script := "#!/bin/sh\n# traj replay evaluate " + r.Name + ": a share of the trees per array task\nexec " + scheduler.ShellJoin(args) + "\n"
	scriptPath := filepath.Join(dir, "task.sh")
	if err := os.WriteFile(scriptPath, []byte(script), 0o755); err != nil {
		return nil, fmt.Errorf("write sbatch script: %w", err)
	}
	sargs := []string{fmt.Sprintf("--array=0-%d", tasks-1), "--job-name=traj-evaluate-" + r.Name,
		"--output=" + filepath.Join(dir, "task-%a.out"), "--chdir=" + dir}
	sargs = append(append(sargs, r.Sbatch...), scriptPath)
	job, err := scheduler.Sbatch(ctx, sargs...)
	if err != nil {
		return nil, err
	}
	sub := &Submission{JobID: job, Dir: dir, Tasks: tasks, Trees: len(r.Trees), SubmittedAt: time.Now().UTC().Format(time.RFC3339)}
	subs, err := Submissions(r.Work)
	if err != nil {
		return sub, err
	}
	b, _ := json.MarshalIndent(append(subs, *sub), "", "  ")
	if err := atomicfile.WriteBytes(filepath.Join(r.Work, submissionsName), b); err != nil {
		return sub, fmt.Errorf("record submission %s: %w", job, err)
	}
	return sub, nil
}

// Tasks is the state of a submission's tasks.
type Tasks struct {
	// Queued maps a task still in the queue to its state (PENDING,
	// RUNNING, …).
	Queued map[int]string
	// Done holds the reports of the tasks that finished (Error says
	// whether every tree of theirs was evaluated).
	Done map[int]TaskReport
	// Lost are tasks that left the queue without a report: killed
	// (scancel, time limit, node loss) or crashed.
	Lost []int
}

// InQueue reports whether some task is still queued.
func (t Tasks) InQueue() bool { return len(t.Queued) > 0 }

// Failed are the tasks that did not evaluate all their trees, in order.
func (t Tasks) Failed() []int {
	out := append([]int{}, t.Lost...)
	for i, r := range t.Done {
		if r.Error != "" {
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return out
}

// Summary is one line: tasks running, pending, done, failed.
func (t Tasks) Summary() string {
	running, pending := 0, 0
	for _, s := range t.Queued {
		if s == "RUNNING" || s == "COMPLETING" {
			running++
		} else {
			pending++
		}
	}
	failed := len(t.Failed())
	return fmt.Sprintf("tasks: %d running, %d pending, %d done, %d failed", running, pending, len(t.Done)+len(t.Lost)-failed, failed)
}

// State asks squeue about sub's tasks and reads their reports.
func State(ctx context.Context, sub Submission) (Tasks, error) {
	states, err := scheduler.ArrayStates(ctx, []string{sub.JobID})
	if err != nil {
		return Tasks{}, err
	}
	t := Tasks{Queued: states[sub.JobID], Done: map[int]TaskReport{}}
	if t.Queued == nil {
		t.Queued = map[int]string{}
	}
	for i := range sub.Tasks {
		if _, queued := t.Queued[i]; queued {
			continue
		}
		r, ok, err := readReport(sub.Dir, i)
		if err != nil {
			return t, err
		}
		if ok {
			t.Done[i] = r
		} else {
			t.Lost = append(t.Lost, i)
		}
	}
	return t, nil
}

// Kube is an evaluation's Kubernetes manifest request.
type Kube struct {
	// Name names the objects (the trajectory id).
	Name, Namespace string
	// Image holds traj and the test fixtures (TRAJ_TESTS_DIR).
	Image string
	// StoreClaim is the PersistentVolumeClaim of a folder store, mounted
	// at scheduler.StoreMountPath; "" for an s3:// store.
	StoreClaim string
	// Secret is a Secret whose keys become the pods' environment (store
	// credentials).
	Secret string
	Trees  []string
	Tasks  int
	// TaskArgs follow `traj` in each pod; "--trees FILE --tasks N" are
	// added.
	TaskArgs  []string
	Resources scheduler.Resources
}

// KubeManifest is a ConfigMap holding the trees file and an Indexed Job
// with one completion per task, as one YAML manifest.
func KubeManifest(k Kube) ([]byte, error) {
	if len(k.Trees) == 0 {
		return nil, errors.New("kubernetes manifest: no trees")
	}
	if k.Image == "" {
		return nil, errors.New("kubernetes manifest: an image is required (traj and the test fixtures)")
	}
	tasks := min(max(k.Tasks, 1), len(k.Trees))
	name := scheduler.KubeName("traj-evaluate-" + k.Name)
	labels := map[string]string{"app.kubernetes.io/name": "traj", "app.kubernetes.io/component": "evaluate", "traj.dev/trajectory": scheduler.KubeName(k.Name)}
	cm := scheduler.NewConfigMap(name+"-trees", k.Namespace, labels, map[string]string{TreesName: strings.Join(k.Trees, "\n") + "\n"})
	const dir = "/etc/traj"
	vol, mount := scheduler.ConfigMapVolume("trees", cm.Name, dir)
	volumes, mounts := []scheduler.Volume{vol}, []scheduler.VolumeMount{mount}
	if k.StoreClaim != "" {
		vol, mount := scheduler.StoreClaim(k.StoreClaim)
		volumes, mounts = append(volumes, vol), append(mounts, mount)
	}
	args := append(append([]string{}, k.TaskArgs...), "--trees", dir+"/"+TreesName, "--tasks", strconv.Itoa(tasks))
	job := scheduler.IndexedJob{Name: name, Namespace: k.Namespace, Labels: labels, Image: k.Image, Args: args,
		Completions: int32(tasks), Parallelism: int32(tasks), BackoffPerIndex: 2,
		Volumes: volumes, Mounts: mounts, Resources: k.Resources, Secret: k.Secret}.Job()
	return scheduler.YAML(cm, job)
}
