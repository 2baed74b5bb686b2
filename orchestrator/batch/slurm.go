package batch

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/trajlab/traj/sandbox/xec"
)

// Slurm: the commands (sbatch, squeue) run through sandbox/xec, each
// bounded in time and output.

// Command runs a scheduler command through sandbox/xec (its own process
// group, killed whole after Timeout) and returns its stdout; stderr goes
// into the error.
func Command(ctx context.Context, name string, args ...string) ([]byte, error) {
	res, err := xec.Run(ctx, xec.Command{Path: name, Args: args, Timeout: Timeout, OutputLimit: outputLimit})
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: %w", name, err)
	case res.TimedOut:
		return nil, fmt.Errorf("%s: no answer in %s", name, Timeout)
	case ctx.Err() != nil:
		return nil, fmt.Errorf("%s: %w", name, ctx.Err())
	case res.ExitCode != 0:
		return nil, fmt.Errorf("%s: exit status %d: %s", name, res.ExitCode, strings.TrimSpace(res.Stderr))
	case len(res.Stdout) >= outputLimit:
		return nil, fmt.Errorf("%s: more than %d bytes of output", name, outputLimit)
	}
	return []byte(res.Stdout), nil
}

// A scheduler command (sbatch, squeue, sacct, scancel) answers in seconds;
// a controller that does not answer in minutes is down. Its output is a
// line per job at most.
const (
	Timeout     = 5 * time.Minute
	outputLimit = 64 << 20
)

// sbatch submits with `sbatch --parsable args…` and returns the job id.
func sbatch(ctx context.Context, args ...string) (string, error) {
	out, err := Command(ctx, "sbatch", append([]string{"--parsable"}, args...)...)
	if err != nil {
		return "", err
	}
	job, _, _ := strings.Cut(strings.TrimSpace(string(out)), ";")
	if _, err := strconv.Atoi(job); err != nil {
		return "", fmt.Errorf("sbatch printed %q, not a job id", out)
	}
	return job, nil
}

// ArrayStates is squeue's state (PENDING, RUNNING, …) of every array task
// of jobs still in the queue: job id → task index → state. A task that
// left the queue is absent.
func ArrayStates(ctx context.Context, jobs []string) (map[string]map[int]string, error) {
	states := map[string]map[int]string{}
	if len(jobs) == 0 {
		return states, nil
	}
	out, err := Command(ctx, "squeue", "-h", "-r", "-j", strings.Join(jobs, ","), "-o", "%i %T")
	if err != nil {
		// squeue refuses ids it no longer knows (finished long ago) only
		// when all are unknown: that is an empty queue.
		if strings.Contains(err.Error(), "Invalid job id") {
			return states, nil
		}
		return nil, err
	}
	return parseQueue(out), nil
}

// parseQueue reads squeue -r -o "%i %T" lines: "job_index STATE", or a
// pending range not yet split ("12_[2-5]", "12_[2-5%1]"), one per index.
func parseQueue(out []byte) map[string]map[int]string {
	states := map[string]map[int]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		job, idx, ok := strings.Cut(f[0], "_")
		if !ok {
			continue
		}
		if strings.HasPrefix(idx, "[") {
			lo, hi, ok := arrayRange(idx)
			if !ok {
				continue
			}
			for i := lo; i <= hi; i++ {
				put(states, job, i, f[1])
			}
			continue
		}
		if i, err := strconv.Atoi(idx); err == nil {
			put(states, job, i, f[1])
		}
	}
	return states
}

func put(states map[string]map[int]string, job string, i int, state string) {
	if states[job] == nil {
		states[job] = map[int]string{}
	}
	states[job][i] = state
}

// arrayRange reads a pending range "[lo-hi]" or "[lo-hi%max]".
func arrayRange(s string) (lo, hi int, ok bool) {
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	s, _, _ = strings.Cut(s, "%")
	a, b, found := strings.Cut(s, "-")
	if !found {
		b = a
	}
	lo, err1 := strconv.Atoi(a)
	hi, err2 := strconv.Atoi(b)
	return lo, hi, err1 == nil && err2 == nil && lo <= hi
}
