package orchestrator

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/trajlab/traj/orchestrator/folder"
	"github.com/trajlab/traj/orchestrator/launch"
	"github.com/trajlab/traj/orchestrator/task"
	"github.com/trajlab/traj/sandbox"
	"github.com/trajlab/traj/sandbox/agent"
	"github.com/trajlab/traj/sandbox/harness"
	"github.com/trajlab/traj/trace/store"
)

// The run options and run.json, mapped one way each (RunStateOf,
// OptionsOf) and merged one way (Inherit) for resume, rerun and fork:
// a run that takes its options from a recorded one never maps a field
// by hand.

// Given names the run options a caller set explicitly, by their flag
// names in traj run ("model", "cpus", "max-tokens", …). An option whose
// value is not its zero counts as given whatever Given says; Given is for
// an option set to its zero on purpose (--cpus 0: no CPU limit,
// --max-tokens 0: no token budget), which a merge must not take for "not
// given" and replace with the recorded one. nil: only the options with a
// value are given.
type Given map[string]bool

// Has reports whether the option of flag is given: it has a value, or the
// caller named it.
func (g Given) Has(flag string, value bool) bool { return value || g[flag] }

// RunStateOf is the one forward map, run options to run.json: what a
// recording of opts from s writes before it starts (status running, pid
// this process; paths made absolute, so a later command from another
// folder finds them). OptionsOf is its reverse.
func RunStateOf(opts Options, s Start) (folder.RunState, error) {
	p := s.Paths
	st := folder.RunState{TrajectoryID: p.ID, Task: s.Task.Name, TaskSource: s.Task.Source, Model: opts.Model,
		MaxParts: opts.MaxParts, TimeoutSec: int64(opts.Timeout / time.Second), Store: s.StoreURL,
		Workspace: p.Workspace, SandboxDir: p.Sandbox, Checkpoints: filepath.Join(p.Sandbox, folder.CheckpointsName),
		StartedAt: s.StartedAt, Status: "running", PID: os.Getpid(),
		Script: absPath(opts.Script), BaseURL: opts.BaseURL, APIKeyEnvs: opts.APIKeyEnvs, TestsDir: absPath(opts.TestsDir),
		HarnessBin: opts.AgentBin, Agent: opts.Agent, MaxTokens: opts.MaxTokens, MaxCost: opts.MaxCost, Price: opts.Price,
		Playback: absPath(opts.playback())}
	if strings.ContainsRune(st.HarnessBin, filepath.Separator) {
		st.HarnessBin = absPath(st.HarnessBin)
	}
	sb, err := json.Marshal(opts.Sandbox)
	if err != nil {
		return st, fmt.Errorf("encode sandbox options: %w", err)
	}
	st.Sandbox = sb
	return st, nil
}

// OptionsOf is the one reverse map, run.json to the run options it
// recorded: the task (a built-in name or the task folder), model, part
// budget, timeout, endpoint (script, base URL, API-key variables),
// harness and its binary, token and cost budgets and price, tests folder,
// sandbox, and for a rerun the model-call record it played (Rerun.Calls).
// What an older run.json lacks stays zero (an empty Agent is
// harness.Default). Sandbox options that do not decode are an error: a
// run is never launched in another sandbox than the one it asked for.
func OptionsOf(st folder.RunState) (Options, error) {
	o := Options{Task: strings.TrimPrefix(st.TaskSource, "builtin:"), Model: st.Model, MaxParts: st.MaxParts,
		Timeout: time.Duration(st.TimeoutSec) * time.Second, Store: st.Store, Script: st.Script, BaseURL: st.BaseURL,
		APIKeyEnvs: st.APIKeyEnvs, Agent: st.Agent, AgentBin: st.HarnessBin, MaxTokens: st.MaxTokens, MaxCost: st.MaxCost,
		Price: st.Price, TestsDir: st.TestsDir}
	if o.Task == "" {
		o.Task = st.Task
	}
	if st.Playback != "" {
		o.Rerun = &Rerun{Calls: st.Playback}
	}
	if len(st.Sandbox) > 0 {
		if err := json.Unmarshal(st.Sandbox, &o.Sandbox); err != nil {
			return o, fmt.Errorf("read the sandbox options in %s of %s: %w", store.RunStateName, st.TrajectoryID, err)
		}
	}
	return o, nil
}

// Inheritance is what differs in how a resume, a fork and a rerun take a
// recorded run's options.
type Inheritance struct {
	// Untrusted: the recorded options may come from another machine or an
	// edited run.json (a fork's or a rerun's source): its harness binary
	// is taken only when it exists here, and its sandbox provider never
	// when it is local (an agent runs unisolated only when the user names
	// local); the default disk cap applies when it recorded none.
	Untrusted bool
	// Playback: every model call is answered from the source's record (a
	// rerun), so no endpoint (script, base URL, API-key variables) is
	// taken, nor the harness binary: a rerun runs the harness traj run
	// would find, and its version check says when it is another.
	Playback bool
}

// Conflict is a given option that a run taking a recorded one's options
// cannot change (the task, the harness).
type Conflict struct {
	// Flag is the option's flag name; Given and Recorded its two values.
	Flag, Given, Recorded string
}

func (c *Conflict) Error() string {
	return fmt.Sprintf("--%s %s: the recorded %s is %s", c.Flag, c.Given, c.Flag, c.Recorded)
}

// Inherit is the one merge of run options, used by resume, rerun and
// fork: an option given (see Given) is o's, an option not given is
// rec's (OptionsOf the recorded run.json); defaults apply after it
// (Defaults, then Validate). The task and the harness are rec's: another
// one given is a *Conflict. The endpoint (script, base URL) is rec's only
// for rec's model, the harness binary only for rec's harness, the token
// and cost budgets and the price only for rec's model (a price is a
// model's). Only the options above are taken: the store, the work folder
// and the trajectory id are the caller's.
func Inherit(o Options, given Given, rec Options, how Inheritance) (Options, error) {
	if given.Has("task", o.Task != "") && o.Task != rec.Task {
		tk, err := task.Load(o.Task)
		if err != nil || strings.TrimPrefix(tk.Source, "builtin:") != rec.Task {
			return o, &Conflict{Flag: "task", Given: o.Task, Recorded: rec.Task}
		}
	}
	o.Task = rec.Task
	recAgent := cmp.Or(rec.Agent, harness.Default)
	if given.Has("agent", o.Agent != "") && cmp.Or(o.Agent, harness.Default) != recAgent {
		return o, &Conflict{Flag: "agent", Given: o.Agent, Recorded: recAgent}
	}
	o.Agent = rec.Agent
	if !given.Has("model", o.Model != "") {
		o.Model = rec.Model
	}
	sameModel := o.Model == rec.Model
	if !how.Playback && sameModel {
		if !given.Has("script", o.Script != "") {
			o.Script = rec.Script
		}
		if !given.Has("base-url", o.BaseURL != "") {
			o.BaseURL = rec.BaseURL
		}
	}
	if !how.Playback && !given.Has("api-key-env", len(o.APIKeyEnvs) > 0) {
		o.APIKeyEnvs = rec.APIKeyEnvs
	}
	if !how.Playback && !given.Has("agent-bin", o.AgentBin != "") && rec.AgentBin != "" {
		if _, err := os.Stat(rec.AgentBin); err == nil || !how.Untrusted {
			o.AgentBin = rec.AgentBin
		}
	}
	if !given.Has("max-parts", o.MaxParts != 0) {
		o.MaxParts = rec.MaxParts
	}
	if !given.Has("timeout", o.Timeout != 0) {
		o.Timeout = rec.Timeout
	}
	if !given.Has("tests-dir", o.TestsDir != "") {
		o.TestsDir = rec.TestsDir
	}
	if sameModel {
		if !given.Has("max-tokens", o.MaxTokens != 0) {
			o.MaxTokens = rec.MaxTokens
		}
		if !given.Has("max-cost", o.MaxCost != 0) {
			o.MaxCost = rec.MaxCost
		}
		if !given.Has("price", o.Price != nil) {
			o.Price = rec.Price
		}
	}
	o.Sandbox = inheritSandbox(o.Sandbox, given, rec.Sandbox, how)
	return o, nil
}

// inheritSandbox is Inherit for the sandbox options: each setting given is
// o's, else rec's (see Inheritance.Untrusted for the provider).
func inheritSandbox(o launch.SandboxOptions, given Given, rec launch.SandboxOptions, how Inheritance) launch.SandboxOptions {
	if !given.Has("sandbox", o.Provider != "") && !(how.Untrusted && rec.Provider == sandbox.ProviderLocal) {
		o.Provider = rec.Provider
	}
	if !given.Has("cpus", o.Limits.CPUs != 0) {
		o.Limits.CPUs = rec.Limits.CPUs
	}
	if !given.Has("memory", o.Limits.Memory != 0) {
		o.Limits.Memory = rec.Limits.Memory
	}
	if !given.Has("pids", o.Limits.Processes != 0) {
		o.Limits.Processes = rec.Limits.Processes
	}
	if !given.Has("disk", o.Disk != 0) {
		o.Disk, o.DiskOptional = rec.Disk, rec.DiskOptional
	}
	if !given.Has("network", o.Network != "") {
		o.Network = rec.Network
	}
	if !given.Has("pass-env", o.Env != nil) {
		o.Env = rec.Env
	}
	if o.Image == "" {
		o.Image = rec.Image
	}
	if o.Engine == "" {
		o.Engine = rec.Engine
	}
	return o
}

// Defaults fills what is still unset after the merge (or in a new run):
// the task (DefaultTask) and the disk cap (DefaultDisk where it can be
// mounted, not required). A resumed run keeps its recorded cap, even
// none: its workspace already is where it is, so resume does not call
// Defaults. Validate fills the rest (timeout, harness).
func (o *Options) Defaults() {
	if o.Task == "" {
		o.Task = DefaultTask
	}
	if o.Sandbox.Disk == 0 {
		o.Sandbox.Disk, o.Sandbox.DiskOptional = DefaultDisk, true
	}
}

// DefaultTask is the task of a new run that names none.
const DefaultTask = "c-compiler"

// ParseSize reads a memory or disk size (--memory, --disk): a number of
// bytes with an optional k, m, g or t suffix (binary units; 4g, 4GiB), ""
// for the default (0) and "none", "off" or "0" for no limit (-1).
func ParseSize(s string) (int64, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	switch s {
	case "":
		return 0, nil
	case "none", "off", "0":
		return -1, nil
	}
	mult := int64(1)
	if i := strings.IndexAny(s, "kmgt"); i >= 0 {
		mult = map[byte]int64{'k': 1 << 10, 'm': 1 << 20, 'g': 1 << 30, 't': 1 << 40}[s[i]]
		if rest := strings.TrimSuffix(s[i+1:], "b"); rest != "" && rest != "i" && rest != "ib" {
			return 0, fmt.Errorf("%q: want a size like 4g or 512m", s)
		}
		s = s[:i]
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q: want a size like 4g or 512m", s)
	}
	return int64(n * float64(mult)), nil
}

// ParsePrice reads --price: IN,OUT[,CACHE_READ[,CACHE_WRITE]] in dollars
// per million tokens ("" is no price).
func ParsePrice(s string) (*agent.Price, error) {
	if s == "" {
		return nil, nil
	}
	fields := strings.Split(s, ",")
	if len(fields) < 2 || len(fields) > 4 {
		return nil, fmt.Errorf("--price %q: want INPUT,OUTPUT[,CACHE_READ[,CACHE_WRITE]] in dollars per million tokens", s)
	}
	var v [4]float64
	for i, f := range fields {
		x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || x < 0 {
			return nil, fmt.Errorf("--price %q: %q is not a price (dollars per million tokens, ≥ 0)", s, f)
		}
		v[i] = x
	}
	return &agent.Price{Input: v[0], Output: v[1], CacheRead: v[2], CacheWrite: v[3]}, nil
}

// RecordedTask is the task folder the run in trajectory folder dir
// recorded (its run.json, read by folder.ReadRunState and mapped by
// OptionsOf), when that folder is here; "" otherwise (a built-in task, no
// run.json, a folder of another machine). What an evaluate of a Harbor
// trajectory opens its environment on when no task folder is given.
func RecordedTask(dir string) string {
	st, err := folder.ReadRunState(filepath.Join(dir, store.RunStateName))
	if err != nil {
		return ""
	}
	o, err := OptionsOf(st)
	if err != nil || !filepath.IsAbs(o.Task) {
		return ""
	}
	if fi, err := os.Stat(o.Task); err != nil || !fi.IsDir() {
		return ""
	}
	return o.Task
}
