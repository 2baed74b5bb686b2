package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/atomicfile"
)

// Executor is where an array runs.
type Executor string

const (
	// Slurm submits with sbatch; squeue tells its tasks' states.
	Slurm Executor = "slurm"
	// Kubernetes writes an Indexed Job manifest for kubectl apply -f.
	Kubernetes Executor = "kubernetes"
)

// Array is one submission: Tasks processes, task i running Command with
// i in SLURM_ARRAY_TASK_ID (Slurm) or JOB_COMPLETION_INDEX (Kubernetes).
type Array struct {
	Executor Executor
	// Name is the job's name (Slurm) or, as a DNS label, the objects'
	// (Kubernetes).
	Name string
	// Tasks is the array's size; 0 is one job, not an array (Slurm).
	Tasks int
	// Command is what a task runs: for Slurm the whole command line (the
	// traj binary, absolute, first), for Kubernetes the arguments after
	// `traj` in the image.
	Command []string
	// About is what the tasks do, one line, for the script's comment.
	About string
	Slurm SlurmOptions
	Kube  Kube
}

// SlurmOptions are an array's sbatch settings.
type SlurmOptions struct {
	// Dir receives the script (Script, default task.sh); it must be
	// reachable from the nodes.
	Dir, Script string
	// Log is sbatch's --output pattern (%A job, %a task); Chdir the
	// tasks' working folder.
	Log, Chdir string
	// MaxActive bounds the tasks running at once (0: no bound).
	MaxActive int
	// After starts the job once job After left the queue, whatever its
	// end (afterany).
	After string
	// Options are more sbatch options (partition, time, resources).
	Options []string
}

// Submission is the record of one submission: what was submitted, its
// job, its size and how to poll it. Callers keep a log of them (Append,
// Read), adding the fields their tasks read (an experiment's cells, an
// evaluation's trees) by embedding it.
type Submission struct {
	// Executor is "" in records older than it: Slurm.
	Executor Executor `json:"executor,omitempty"`
	// JobID is Slurm's job id, or the Kubernetes Job's name.
	JobID string `json:"job_id"`
	Name  string `json:"name,omitempty"`
	// Dir holds what was submitted (script, the tasks' inputs and logs).
	Dir string `json:"dir,omitempty"`
	// Tasks is the array's size (0: one job).
	Tasks       int    `json:"tasks,omitempty"`
	SubmittedAt string `json:"submitted_at"`
	// Poll is the command that shows the tasks' states, for a person.
	Poll string `json:"poll,omitempty"`
}

// Submit submits a: an sbatch array (or one job) for Slurm, the manifest
// written to manifest for Kubernetes (the caller applies it). It returns
// the submission's record; the caller logs it (Append).
func Submit(ctx context.Context, a Array, manifest io.Writer) (Submission, error) {
	sub := Submission{Executor: a.Executor, Name: a.Name, Tasks: a.Tasks}
	switch a.Executor {
	case Slurm:
		job, err := submitSlurm(ctx, a)
		if err != nil {
			return sub, err
		}
		sub.JobID, sub.Dir = job, a.Slurm.Dir
		sub.Poll = "squeue -r -j " + job
	case Kubernetes:
		objs, err := Manifest(a)
		if err != nil {
			return sub, err
		}
		y, err := objs.YAML()
		if err != nil {
			return sub, err
		}
		if _, err := manifest.Write(y); err != nil {
			return sub, fmt.Errorf("write manifest: %w", err)
		}
		sub.JobID, sub.Tasks = objs.Job.Name, int(*objs.Job.Spec.Completions)
		sub.Poll = "kubectl get job " + trace.ShellWord(objs.Job.Name)
		if ns := objs.Job.Namespace; ns != "" {
			sub.Poll += " -n " + trace.ShellWord(ns)
		}
	default:
		return sub, fmt.Errorf("submit %s: no executor %q (slurm, kubernetes)", a.Name, a.Executor)
	}
	sub.SubmittedAt = time.Now().UTC().Format(time.RFC3339)
	return sub, nil
}

// submitSlurm writes the script into Dir and submits it.
func submitSlurm(ctx context.Context, a Array) (string, error) {
	o := a.Slurm
	if len(a.Command) == 0 || o.Dir == "" {
		return "", fmt.Errorf("submit %s: no command or no folder", a.Name)
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return "", fmt.Errorf("make submission folder: %w", err)
	}
	name := o.Script
	if name == "" {
		name = "task.sh"
	}
	script := filepath.Join(o.Dir, name)
	if err := os.WriteFile(script, []byte(Script(a.About, a.Command)), 0o755); err != nil {
		return "", fmt.Errorf("write sbatch script: %w", err)
	}
	var args []string
	if a.Tasks > 0 {
		array := fmt.Sprintf("0-%d", a.Tasks-1)
		if o.MaxActive > 0 {
			array += "%" + strconv.Itoa(o.MaxActive)
		}
		args = append(args, "--array="+array)
	}
	if o.After != "" {
		args = append(args, "--dependency=afterany:"+o.After)
	}
	args = append(args, "--job-name="+a.Name)
	if o.Log != "" {
		args = append(args, "--output="+o.Log)
	}
	if o.Chdir != "" {
		args = append(args, "--chdir="+o.Chdir)
	}
	args = append(append(args, o.Options...), script)
	return sbatch(ctx, args...)
}

// Script is the sh script of a task: a comment saying what it does, then
// exec of the command, each argument quoted by trace.ShellWord.
func Script(about string, command []string) string {
	words := make([]string, len(command))
	for i, a := range command {
		words[i] = trace.ShellWord(a)
	}
	return "#!/bin/sh\n# " + strings.ReplaceAll(about, "\n", " ") + "\nexec " + strings.Join(words, " ") + "\n"
}

// Append adds sub to the log at path (a JSON list, oldest first).
func Append[S any](path string, sub S) error {
	subs, err := Read[S](path)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(append(subs, sub), "", "  ")
	if err != nil {
		return fmt.Errorf("record submission: %w", err)
	}
	if err := atomicfile.WriteBytes(path, b); err != nil {
		return fmt.Errorf("record submission: %w", err)
	}
	return nil
}

// Read reads the log at path; none is an empty log.
func Read[S any](path string) ([]S, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	var subs []S
	if err == nil {
		err = json.Unmarshal(b, &subs)
	}
	if err != nil {
		return nil, fmt.Errorf("read submissions %s: %w", path, err)
	}
	return subs, nil
}

// TaskIndex is this process's index in its array: SLURM_ARRAY_TASK_ID
// (a Slurm array task) or JOB_COMPLETION_INDEX (an Indexed Job pod); ok
// is false when neither is set.
func TaskIndex(getenv func(string) string) (index int, ok bool, err error) {
	for _, env := range []string{"SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX"} {
		if v := getenv(env); v != "" {
			i, err := strconv.Atoi(v)
			if err != nil || i < 0 {
				return 0, false, fmt.Errorf("%s=%q: not an index", env, v)
			}
			return i, true, nil
		}
	}
	return 0, false, nil
}
