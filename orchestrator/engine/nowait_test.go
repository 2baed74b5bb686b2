package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trajlab/traj/orchestrator/agenttest"
	"github.com/trajlab/traj/orchestrator/engine"
	"github.com/trajlab/traj/orchestrator/groundtruth"
	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/evalbox"
	"github.com/trajlab/traj/trace/gitstate"
)

// heldEvaluator is failure injection: every evaluation waits at gate
// until the test lets it through, then scores each path 1 of 1 passed
// when the tree holds a file "pass", 0 of 1 otherwise. It stands in for
// an evaluation that takes long; the real one is tested in
// orchestrator/groundtruth and end to end.
type heldEvaluator struct{ gate chan struct{} }

func (heldEvaluator) Version() string { return "held-1" }

func (h heldEvaluator) Evaluate(ctx context.Context, dir string, paths []string) (replay.Result, error) {
	select {
	case <-h.gate:
	case <-ctx.Done():
		return replay.Result{}, ctx.Err()
	}
	_, err := os.Stat(filepath.Join(dir, "pass"))
	res := replay.Result{Suites: map[string]replay.SuiteResult{}}
	for _, p := range paths {
		s := replay.SuiteResult{Total: 1, Cases: []replay.CaseResult{{Name: p + "/case", Passed: err == nil}}}
		if err == nil {
			s.Passed = 1
		} else {
			s.Failed = 1
		}
		res.Suites[p] = s
	}
	return res, nil
}

func (h heldEvaluator) EvaluateDetailed(ctx context.Context, dir string, paths []string) (evalbox.Payload, error) {
	r, err := h.Evaluate(ctx, dir, paths)
	return evalbox.Payload{Result: r}, err
}

// TestLoopDoesNotWaitForGroundTruth: with ground_truth.wait false, turn
// ends never wait for the workspace's evaluation. Every evaluation is
// held at a gate (failure injection) that the test opens only once, in
// the middle of turn 2, for part 1's checkpoint: were the loop waiting,
// turn 1 would never end (the test then fails at go test's timeout;
// checked by flipping NoWait). Turn 2's prompt says no result has landed;
// turn 3's names part 1's checkpoint and the part the workspace is at.
func TestLoopDoesNotWaitForGroundTruth(t *testing.T) {
	h := newHarness(t)
	b, root := h.b, h.root
	gate := make(chan struct{})
	var bg *groundtruth.Background
	h.groundTruth = func(repo *gitstate.Repo) engine.GroundTruth {
		s := &groundtruth.Scorer{Trees: repo, Eval: heldEvaluator{gate}, Paths: []string{"basics/smoke", "basics/expressions"}}
		bg = groundtruth.Start(context.Background(), s, groundtruth.Options{NoWait: true})
		return bg
	}
	defer func() {
		close(gate)
		bg.Close(context.Background())
	}()

	m1, it := b.Message(root, "assistant")
	turn1 := agenttest.Turn{it, b.CallStart(root, m1)}
	w1 := b.Tool(root, m1, "write", map[string]any{"filePath": "a.c"}, "wrote")
	w1[len(w1)-1].Before = h.write("a.c", "int main(void) { return 0; }\n")
	turn1 = append(turn1, w1...)
	turn1 = append(turn1, b.CallFinish(root, m1, 10, 1, 0))

	m2, it := b.Message(root, "assistant")
	turn2 := agenttest.Turn{it, b.CallStart(root, m2)}
	t2 := b.Text(root, m2, "thinking")
	t2[0].Before = func() error {
		// Part 1's evaluation may finish now; the next waits again.
		gate <- struct{}{}
		for {
			if _, ok := bg.Latest(); ok {
				return nil
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	turn2 = append(turn2, t2...)
	w2 := b.Tool(root, m2, "write", map[string]any{"filePath": "pass"}, "wrote")
	w2[len(w2)-1].Before = h.write("pass", "yes\n")
	turn2 = append(turn2, w2...)
	turn2 = append(turn2, b.CallFinish(root, m2, 10, 1, 0))

	m3, it := b.Message(root, "assistant")
	turn3 := agenttest.Turn{it, b.CallStart(root, m3)}
	turn3 = append(turn3, b.Text(root, m3, "done")...)
	turn3 = append(turn3, b.CallFinish(root, m3, 10, 1, 0))

	agent := agenttest.New(b, turn1, turn2, turn3)
	out, tr := h.run(context.Background(), agent, 4)
	if out.Turns != 3 || len(tr.Turns) != 3 {
		t.Fatalf("outcome %+v with %d turns, want 3", out, len(tr.Turns))
	}
	p2 := tr.Turns[1].Prompt
	if !strings.Contains(p2, "has not landed yet") {
		t.Errorf("turn 2 prompt does not say no result landed:\n%s", p2)
	}
	p3 := tr.Turns[2].Prompt
	if !strings.Contains(p3, "at part 1, the latest that landed; your workspace is now at part 3") {
		t.Errorf("turn 3 prompt does not name part 1's result and the workspace's part:\n%s", p3)
	}
	if !strings.Contains(p3, "basics/smoke: 0/1 passed") {
		t.Errorf("turn 3 prompt lacks part 1's counts:\n%s", p3)
	}
}
