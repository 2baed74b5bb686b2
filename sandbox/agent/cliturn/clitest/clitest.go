// Package clitest is test support for harness adapters: the traj binary
// for the tests MCP server, the scripted model behind the real model
// gateway, and a collector of a turn's events.
package clitest

import (
	"context"
	"fmt"
	"github.com/trajlab/traj/trace/store"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trajlab/traj/sandbox/agent"
	"github.com/trajlab/traj/sandbox/gateway/model"
	"github.com/trajlab/traj/sandbox/scripted"
)

var trajOnce struct {
	sync.Once
	path string
	err  error
}

// TrajBinary is the traj executable (for `traj mcp`): $TRAJ_BIN (make
// test builds it), else built once per test binary.
func TrajBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("TRAJ_BIN"); p != "" {
		return p
	}
	trajOnce.Do(func() {
		dir, err := os.MkdirTemp("", "traj-bin-")
		if err != nil {
			trajOnce.err = err
			return
		}
		trajOnce.path = filepath.Join(dir, "traj")
		out, err := exec.Command("go", "build", "-o", trajOnce.path, "github.com/trajlab/traj/cmd/traj").CombinedOutput()
		if err != nil {
			trajOnce.err = fmt.Errorf("go build traj: %v\n%s", err, out)
		}
	})
	if trajOnce.err != nil {
		t.Fatalf("%v (or set TRAJ_BIN; make test does)", trajOnce.err)
	}
	return trajOnce.path
}

// Harness returns the harness binary located by locate, skipping the test
// when it is not installed (failing under CI, where `make setup` ran).
func Harness(t testing.TB, what string, locate func(string) (string, error)) string {
	t.Helper()
	p, err := locate("")
	if err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s missing under CI: %v", what, err)
	}
	t.Skipf("%s missing: %v", what, err)
	return ""
}

// Model is the scripted model behind the real model gateway.
type Model struct {
	Scripted *scripted.Server
	Gateway  *model.Gateway
	// BaseURL is the gateway's base URL, ending in /v1.
	BaseURL string
	// Token is what the harness presents; RealKey what the gateway sends
	// upstream (never in the harness's environment).
	Token, RealKey string
	// RecordPath is the model-call record.
	RecordPath string
}

// StartModel serves script through a gateway until the test ends.
func StartModel(t testing.TB, script string, price *agent.Price) *Model {
	t.Helper()
	s, err := scripted.Parse("test.jsonl", strings.NewReader(script))
	if err != nil {
		t.Fatal(err)
	}
	srv := scripted.New(s, scripted.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	ln, err := model.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(1)
	go func() { defer wg.Done(); _ = srv.Serve(ctx, ln) }()
	m := &Model{Scripted: srv, Token: "traj-tok-" + fmt.Sprint(time.Now().UnixNano()),
		RealKey: "sk-real-test-key-4f9a2c", RecordPath: filepath.Join(t.TempDir(), store.ModelCallsName)}
	rec, err := os.Create(m.RecordPath)
	if err != nil {
		t.Fatal(err)
	}
	g, err := model.New(model.Options{Upstream: scripted.BaseURL(ln.Addr()), APIKey: m.RealKey, Token: m.Token,
		Record: rec, Price: price})
	if err != nil {
		t.Fatal(err)
	}
	gln, err := model.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(1)
	go func() { defer wg.Done(); _ = g.Serve(ctx, gln) }()
	m.Gateway, m.BaseURL = g, "http://"+gln.Addr().String()+"/v1"
	t.Cleanup(func() { cancel(); wg.Wait(); rec.Close() })
	return m
}

// Turn is what one turn emitted, until the root session went idle.
type Turn struct {
	Events []agent.Event
	// Parts are the latest version of each part, in first-seen order.
	Parts []agent.Part
}

// Counted are the turn's done parts of counted kinds from assistant
// messages, in the order they completed.
func (tr Turn) Counted(users map[string]bool) []agent.Part {
	var out []agent.Part
	seen := map[string]bool{}
	for _, ev := range tr.Events {
		if ev.Kind != agent.EventPart || !ev.Part.Done || !ev.Part.Kind.Counted() || seen[ev.Part.ID] || users[ev.Part.MessageID] {
			continue
		}
		seen[ev.Part.ID] = true
		out = append(out, *ev.Part)
	}
	return out
}

// UserMessages are the ids of user messages among events.
func UserMessages(evs []agent.Event) map[string]bool {
	out := map[string]bool{}
	for _, ev := range evs {
		if ev.Kind == agent.EventMessage && ev.Message.Role == agent.RoleUser {
			out[ev.Message.ID] = true
		}
	}
	return out
}

// Usage adds up the usage of every part (latest version by id).
func (tr Turn) Usage() agent.Usage {
	var u agent.Usage
	for _, p := range tr.Parts {
		if p.Usage != nil {
			u.Add(*p.Usage)
		}
	}
	return u
}

// Collect reads events until root goes idle after being busy (or the
// timeout, which fails the test).
func Collect(t testing.TB, a agent.Agent, root string, timeout time.Duration) Turn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var tr Turn
	idx := map[string]int{}
	busy := false
	for {
		ev, err := a.Next(ctx)
		if err != nil {
			t.Fatalf("after %d events: %v", len(tr.Events), err)
		}
		tr.Events = append(tr.Events, ev)
		switch ev.Kind {
		case agent.EventPart:
			if i, ok := idx[ev.Part.ID]; ok {
				tr.Parts[i] = *ev.Part
			} else {
				idx[ev.Part.ID] = len(tr.Parts)
				tr.Parts = append(tr.Parts, *ev.Part)
			}
		case agent.EventStatus:
			if ev.SessionID != root {
				continue
			}
			if ev.Busy {
				busy = true
			} else if busy {
				return tr
			}
		}
	}
}
