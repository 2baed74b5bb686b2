package harbor

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// Task is a Harbor task folder, read and checked.
type Task struct {
	// Dir is the folder (absolute); Name its base name.
	Dir  string
	Name string
	// Instruction is instruction.md: the agent's prompt.
	Instruction string
	// AgentTimeout and VerifierTimeout are [agent] and [verifier]
	// timeout_sec.
	AgentTimeout    time.Duration
	VerifierTimeout time.Duration
	// VerifierEnv is [verifier] env: variables test.sh gets.
	VerifierEnv map[string]string
	// Environment is [environment].
	Environment Settings
	// HasSolution: solution/solve.sh exists (the oracle's script).
	HasSolution bool
}

// Settings are a task's [environment] table.
type Settings struct {
	BuildTimeout time.Duration
	CPUs         float64
	// Memory and Storage in bytes (0: not set).
	Memory  int64
	Storage int64
	// AllowInternet false: neither the agent's room nor the verifier's
	// has a network.
	AllowInternet bool
	// Workdir is where the workspace is inside the image ("" until the
	// image says: its WORKDIR, else DefaultWorkdir).
	Workdir string
	// DockerImage, when set, is a prebuilt image used instead of
	// environment/Dockerfile (it must be on this machine: nothing is
	// pulled).
	DockerImage string
}

// Defaults of an unset task.toml field (Harbor's).
const (
	DefaultAgentTimeout    = 600 * time.Second
	DefaultVerifierTimeout = 600 * time.Second
	DefaultBuildTimeout    = 600 * time.Second
	DefaultWorkdir         = "/app"
)

// The files of a task folder.
const (
	TaskFile        = "task.toml"
	InstructionFile = "instruction.md"
	DockerfilePath  = "environment/Dockerfile"
	TestScript      = "tests/test.sh"
	SolutionScript  = "solution/solve.sh"
)

// IsTaskFolder reports whether dir holds a task.toml (what tells a Harbor
// task folder from traj's own, which holds task.json).
func IsTaskFolder(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, TaskFile))
	return err == nil && st.Mode().IsRegular()
}

// file is task.toml as written; numbers are floats or integers there.
type file struct {
	Version  string         `toml:"version"`
	Metadata map[string]any `toml:"metadata"`
	Agent    struct {
		TimeoutSec *float64 `toml:"timeout_sec"`
	} `toml:"agent"`
	Verifier struct {
		TimeoutSec *float64          `toml:"timeout_sec"`
		Env        map[string]string `toml:"env"`
	} `toml:"verifier"`
	Solution struct {
		Env map[string]string `toml:"env"`
	} `toml:"solution"`
	Environment struct {
		BuildTimeoutSec *float64 `toml:"build_timeout_sec"`
		CPUs            *float64 `toml:"cpus"`
		Memory          string   `toml:"memory"`
		MemoryMB        *int64   `toml:"memory_mb"`
		Storage         string   `toml:"storage"`
		StorageMB       *int64   `toml:"storage_mb"`
		GPUs            int      `toml:"gpus"`
		AllowInternet   *bool    `toml:"allow_internet"`
		Workdir         string   `toml:"workdir"`
		DockerImage     string   `toml:"docker_image"`
		MCPServers      []any    `toml:"mcp_servers"`
	} `toml:"environment"`
}

// nameRE is traj's task-name rule (orchestrator/task): a folder whose
// name breaks it is refused rather than renamed.
var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// Load reads and checks the task folder dir. Errors name the folder and
// what is wrong with it.
func Load(dir string) (*Task, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("load Harbor task %q: %w", dir, err)
	}
	t, err := load(abs)
	if err != nil {
		return nil, fmt.Errorf("load Harbor task %s: %w", abs, err)
	}
	return t, nil
}

func load(dir string) (*Task, error) {
	raw, err := os.ReadFile(filepath.Join(dir, TaskFile))
	if err != nil {
		return nil, err
	}
	var f file
	md, err := toml.Decode(string(raw), &f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", TaskFile, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, len(und))
		for i, k := range und {
			keys[i] = k.String()
		}
		// Metadata is free-form; anything else unknown is a typo or a
		// setting traj would silently ignore.
		var bad []string
		for _, k := range keys {
			if !strings.HasPrefix(k, "metadata.") && !strings.HasPrefix(k, "environment.mcp_servers") {
				bad = append(bad, k)
			}
		}
		if len(bad) > 0 {
			return nil, fmt.Errorf("%s: unknown keys %s", TaskFile, strings.Join(bad, ", "))
		}
	}
	t := &Task{Dir: dir, Name: strings.ToLower(filepath.Base(dir)), VerifierEnv: f.Verifier.Env}
	if !nameRE.MatchString(t.Name) {
		return nil, fmt.Errorf("folder name %q: want lower-case letters, digits, '.', '_' or '-' (at most 64)", filepath.Base(dir))
	}
	if t.AgentTimeout, err = seconds("agent.timeout_sec", f.Agent.TimeoutSec, DefaultAgentTimeout); err != nil {
		return nil, err
	}
	if t.VerifierTimeout, err = seconds("verifier.timeout_sec", f.Verifier.TimeoutSec, DefaultVerifierTimeout); err != nil {
		return nil, err
	}
	e := f.Environment
	s := &t.Environment
	if s.BuildTimeout, err = seconds("environment.build_timeout_sec", e.BuildTimeoutSec, DefaultBuildTimeout); err != nil {
		return nil, err
	}
	if e.CPUs != nil {
		if *e.CPUs <= 0 || *e.CPUs > 1024 {
			return nil, fmt.Errorf("%s: environment.cpus %v: want more than 0", TaskFile, *e.CPUs)
		}
		s.CPUs = *e.CPUs
	}
	if s.Memory, err = size("environment.memory", e.Memory, e.MemoryMB); err != nil {
		return nil, err
	}
	if s.Storage, err = size("environment.storage", e.Storage, e.StorageMB); err != nil {
		return nil, err
	}
	if e.GPUs > 0 {
		return nil, fmt.Errorf("%s: environment.gpus %d: traj gives rooms no GPU", TaskFile, e.GPUs)
	}
	if len(e.MCPServers) > 0 {
		return nil, fmt.Errorf("%s: environment.mcp_servers: not supported by traj (the agent's tools are its harness's and traj's)", TaskFile)
	}
	s.AllowInternet = e.AllowInternet == nil || *e.AllowInternet
	if e.Workdir != "" {
		if !path.IsAbs(e.Workdir) || path.Clean(e.Workdir) != e.Workdir || e.Workdir == "/" {
			return nil, fmt.Errorf("%s: environment.workdir %q: want an absolute, clean path other than /", TaskFile, e.Workdir)
		}
		s.Workdir = e.Workdir
	}
	s.DockerImage = e.DockerImage
	ins, err := os.ReadFile(filepath.Join(dir, InstructionFile))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", InstructionFile, unwrapPath(err))
	}
	if strings.TrimSpace(string(ins)) == "" {
		return nil, fmt.Errorf("%s is empty", InstructionFile)
	}
	t.Instruction = string(ins)
	if err := regular(dir, TestScript); err != nil {
		return nil, err
	}
	if s.DockerImage == "" {
		if _, err := os.Stat(filepath.Join(dir, "environment", "docker-compose.yaml")); err == nil {
			return nil, errors.New("environment/docker-compose.yaml: compose environments are not supported; give environment/Dockerfile")
		}
		if err := regular(dir, DockerfilePath); err != nil {
			return nil, fmt.Errorf("%w (or set environment.docker_image in %s)", err, TaskFile)
		}
	}
	switch err := regular(dir, SolutionScript); {
	case err == nil:
		t.HasSolution = true
	case errors.Is(err, fs.ErrNotExist):
	default:
		return nil, err
	}
	return t, nil
}

// regular checks that rel is a regular file of dir (no link: a task
// folder's files are read on the host).
func regular(dir, rel string) error {
	st, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		return fmt.Errorf("%s: %w", rel, unwrapPath(err))
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", rel)
	}
	return nil
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func seconds(key string, v *float64, def time.Duration) (time.Duration, error) {
	if v == nil {
		return def, nil
	}
	if *v <= 0 || math.IsInf(*v, 0) || math.IsNaN(*v) || *v > 7*24*3600 {
		return 0, fmt.Errorf("%s: %s %v: want seconds, more than 0 and at most a week", TaskFile, key, *v)
	}
	return time.Duration(*v * float64(time.Second)), nil
}

var sizeRE = regexp.MustCompile(`^(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?$`)

// size reads "2G", "512M", "1024" (bytes) or key_mb.
func size(key, s string, mb *int64) (int64, error) {
	if mb != nil {
		if s != "" {
			return 0, fmt.Errorf("%s: both %s and %s_mb are set", TaskFile, key, key)
		}
		if *mb <= 0 {
			return 0, fmt.Errorf("%s: %s_mb %d: want more than 0", TaskFile, key, *mb)
		}
		return *mb << 20, nil
	}
	if s == "" {
		return 0, nil
	}
	m := sizeRE.FindStringSubmatch(strings.ToUpper(strings.TrimSpace(s)))
	if m == nil {
		return 0, fmt.Errorf("%s: %s %q: want a size such as 2G or 512M", TaskFile, key, s)
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s: %s %q: want a size more than 0", TaskFile, key, s)
	}
	shift := map[string]uint{"": 0, "K": 10, "M": 20, "G": 30, "T": 40}[m[2]]
	return int64(n * float64(int64(1)<<shift)), nil
}

// Dataset lists the task folders of a dataset folder (its immediate
// subfolders holding a task.toml, by name), and false when dir is not
// one (it is a task folder itself, or holds no task folder): a dataset
// is an experiment's task axis, a trajectory per task.
func Dataset(dir string) ([]string, bool) {
	if IsTaskFolder(dir) {
		return nil, false
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, false
	}
	var out []string
	for _, e := range ents {
		if p := filepath.Join(dir, e.Name()); e.IsDir() && IsTaskFolder(p) {
			out = append(out, p)
		}
	}
	return out, len(out) > 0
}
