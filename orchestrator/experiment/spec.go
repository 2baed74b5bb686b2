package experiment

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/trajlab/traj/sandbox/harness"
	"github.com/trajlab/traj/trace"
	"github.com/trajlab/traj/trace/store"
)

// Spec is an experiment spec as written in its YAML file (format in doc.go).
type Spec struct {
	Name     string            `yaml:"name"`
	Store    string            `yaml:"store"`
	WorkDir  string            `yaml:"work_dir"`
	Matrix   Matrix            `yaml:"matrix"`
	Budget   Budget            `yaml:"budget"`
	Sandbox  string            `yaml:"sandbox"`
	Limits   Limits            `yaml:"limits"`
	Relaunch Relaunch          `yaml:"relaunch"`
	Run      map[string]string `yaml:"run"`
	// KeepSandbox keeps each finished trajectory's sandbox folder.
	KeepSandbox bool       `yaml:"keep_sandbox"`
	Slurm       Slurm      `yaml:"slurm"`
	Kubernetes  Kubernetes `yaml:"kubernetes"`
	// Evaluate, when set, evaluates each trajectory a Slurm task finishes
	// on the cluster (traj replay evaluate --executor slurm --detach).
	Evaluate *Evaluate `yaml:"evaluate"`
	// Fork, when set, makes every slot a fork of one recorded trajectory
	// (traj run --fork), the matrix crossed with the fork parts: what
	// `traj sweep` runs.
	Fork *Fork `yaml:"fork"`

	// Path is the spec file; Digest the sha256 of its bytes.
	Path   string `yaml:"-"`
	Digest string `yaml:"-"`
	file   *ast.File
}

// Matrix is what varies: every combination of harness, model, task and
// parameter values, Repeats times.
type Matrix struct {
	Harnesses []string            `yaml:"harnesses"`
	Models    []string            `yaml:"models"`
	Tasks     []string            `yaml:"tasks"`
	Params    map[string][]string `yaml:"params"`
	Repeats   int                 `yaml:"repeats"`
	// Include pairs values instead of crossing them: each row is one
	// combination of the keys it names (harness, model, task, or a traj
	// run flag), crossed only with the lists of the keys no row names.
	// Every row names the same keys; a key rows name is not also a list.
	Include []map[string]string `yaml:"include"`
}

// Keys of an include row that are the matrix's own axes (any other key is
// a traj run flag, as in params).
const (
	rowHarness = "harness"
	rowModel   = "model"
	rowTask    = "task"
)

// rowKeys are the keys the include rows name (the first row's: check
// makes every row name the same), sorted.
func (m *Matrix) rowKeys() []string {
	if len(m.Include) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m.Include[0]))
	for k := range m.Include[0] {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// HarnessAxis says whether the harness varies: two or more harnesses
// listed, or include rows naming the harness. Only then is the harness
// in the slots' ids, so the ids of a spec with one harness (or none,
// the default) stay what they were.
func (m *Matrix) HarnessAxis() bool {
	return len(m.Harnesses) > 1 || slices.Contains(m.rowKeys(), rowHarness)
}

// Budget bounds each trajectory.
type Budget struct {
	MaxParts int     `yaml:"max_parts"`
	Timeout  string  `yaml:"timeout"`
	MaxCost  float64 `yaml:"max_cost"`
	// StallTimeout is traj run's stall watchdog (--stall-timeout).
	StallTimeout string `yaml:"stall_timeout"`
}

// Limits are the resources of one trajectory (a Slurm task, a pod; passed
// to traj run when it accepts --cpus / --memory).
type Limits struct {
	CPUs   int    `yaml:"cpus"`
	Memory string `yaml:"memory"`
}

// Relaunch is the policy for trajectories that ended in failure.
type Relaunch struct {
	// MaxAttempts counts the first attempt: 1 never relaunches.
	MaxAttempts int `yaml:"max_attempts"`
	// On lists the end reasons that count as failures.
	On []string `yaml:"on"`
}

// Slurm holds sbatch settings beyond Limits.
type Slurm struct {
	Partition string   `yaml:"partition"`
	Time      string   `yaml:"time"`
	Account   string   `yaml:"account"`
	MaxActive int      `yaml:"max_active"`
	Args      []string `yaml:"args"`
}

// Evaluate is the evaluation attached to each finished trajectory: an
// sbatch array of Tasks tasks over the trees the store's evaluation cache
// lacks, on Tests (default: the trace's test paths), then a job writing
// the trajectory's evaluation.json.
type Evaluate struct {
	Tasks int      `yaml:"tasks"`
	Tests []string `yaml:"tests"`
}

// Fork is the fork axis: each slot forks trajectory From at one of the
// parts At (traj run --fork From --at-part P), Prompt opening the turn
// after the fork point. A fork inherits the source's harness and task,
// so its traj run gets neither --agent nor --task.
type Fork struct {
	From   string `yaml:"from"`
	At     []int  `yaml:"at"`
	Prompt string `yaml:"prompt"`
}

// Kubernetes holds the Indexed Job settings.
type Kubernetes struct {
	Image       string `yaml:"image"`
	Namespace   string `yaml:"namespace"`
	Parallelism int    `yaml:"parallelism"`
	// StoreClaim is a PersistentVolumeClaim mounted at /runs when the store
	// is a folder; with an s3:// store no volume is needed.
	StoreClaim string `yaml:"store_claim"`
	// Secret names a Secret whose keys become environment variables (API
	// keys, AWS credentials).
	Secret string `yaml:"secret"`
}

// Cell is one trajectory slot of the matrix: a combination and a repeat.
// Attempts of a slot are trajectories with ids AttemptID(1), AttemptID(2)…
type Cell struct {
	// Index is the slot's position in the expansion (the array index).
	Index   int               `json:"index"`
	ID      string            `json:"trajectory_id"`
	Harness string            `json:"harness"`
	Model   string            `json:"model"`
	Task    string            `json:"task"`
	Params  map[string]string `json:"params,omitempty"`
	// ForkAt is the source's part this slot forks at (spec fork; 0: none).
	ForkAt int `json:"fork_at,omitempty"`
	Repeat int `json:"repeat"`
}

// Variant names the cell's parameters ("script=a.jsonl"; "" for none),
// in key order: what tells apart cells of one harness × model × task.
func (c Cell) Variant() string {
	keys := make([]string, 0, len(c.Params))
	for k := range c.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		keys[i] = k + "=" + c.Params[k]
	}
	return strings.Join(keys, " ")
}

// AttemptID is the trajectory id of attempt n (1-based) of the slot: the
// slot's id for the first attempt, id-a<n> for relaunches.
func (c Cell) AttemptID(n int) string {
	if n <= 1 {
		return c.ID
	}
	return c.ID + "-a" + strconv.Itoa(n)
}

// Group names the cell's harness × model × task combination (and its
// variant, when it has parameters).
func (c Cell) Group() string {
	g := c.Harness + " × " + c.Model + " × " + c.Task
	if v := c.Variant(); v != "" {
		g += " (" + v + ")"
	}
	return g
}

// DefaultRelaunchOn are the end reasons relaunched when the spec names none.
var DefaultRelaunchOn = []string{trace.EndAgentError, trace.EndEnvoiError, trace.EndTimeout}

// DefaultHarness is the harness when the matrix names none.
const DefaultHarness = harness.Default

// SpecError is a problem in a spec file at a line.
type SpecError struct {
	Path string
	Line int
	Msg  string
}

func (e *SpecError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Msg)
}

// SpecErrors are all problems found in a spec, in line order.
type SpecErrors []*SpecError

func (es SpecErrors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

var nameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Load reads and checks the spec at path. Errors name path:line.
func Load(path string) (*Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read experiment spec: %w", err)
	}
	return Parse(path, data)
}

// Parse checks a spec's bytes; path is used in errors and to resolve
// nothing else (relative paths in a spec are relative to the directory
// traj runs in, as for traj run).
func Parse(path string, data []byte) (*Spec, error) {
	s := &Spec{Path: path}
	sum := sha256.Sum256(data)
	s.Digest = hex.EncodeToString(sum[:])
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, yamlError(path, err)
	}
	s.file = f
	if err := yaml.UnmarshalWithOptions(data, s, yaml.DisallowUnknownField()); err != nil {
		return nil, yamlError(path, err)
	}
	if errs := s.check(); len(errs) > 0 {
		sort.SliceStable(errs, func(i, j int) bool { return errs[i].Line < errs[j].Line })
		return nil, errs
	}
	return s, nil
}

// yamlError turns a go-yaml error into a SpecError with the line.
func yamlError(path string, err error) error {
	var ye yaml.Error
	if errors.As(err, &ye) {
		line := 0
		if tk := ye.GetToken(); tk != nil && tk.Position != nil {
			line = tk.Position.Line
		}
		return &SpecError{Path: path, Line: line, Msg: ye.GetMessage()}
	}
	return &SpecError{Path: path, Msg: err.Error()}
}

// line is the line of the node at a YAML path such as $.matrix.models[1],
// or of the closest ancestor that exists, or 0.
func (s *Spec) line(p string) int {
	for p != "" && p != "$" {
		if yp, err := yaml.PathString(p); err == nil {
			if n, err := yp.FilterFile(s.file); err == nil && n != nil {
				if tk := n.GetToken(); tk != nil && tk.Position != nil {
					return tk.Position.Line
				}
			}
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return 0
}

func (s *Spec) errAt(p, format string, args ...any) *SpecError {
	return &SpecError{Path: s.Path, Line: s.line(p), Msg: fmt.Sprintf(format, args...)}
}

// check fills defaults and validates everything that needs no traj binary.
func (s *Spec) check() SpecErrors {
	var errs SpecErrors
	add := func(p, format string, args ...any) { errs = append(errs, s.errAt(p, format, args...)) }
	if s.Name == "" {
		add("$", "name is required")
	} else if !nameRe.MatchString(s.Name) {
		add("$.name", "name %q: use letters, digits, '.', '_' and '-' (at most 64, starting with a letter or digit)", s.Name)
	}
	m := &s.Matrix
	errs = append(errs, s.checkInclude()...)
	rows := m.rowKeys()
	if len(m.Harnesses) == 0 && !slices.Contains(rows, rowHarness) {
		m.Harnesses = []string{DefaultHarness}
	}
	for i, h := range m.Harnesses {
		if _, err := harness.Lookup(h); err != nil && h != "" {
			add(fmt.Sprintf("$.matrix.harnesses[%d]", i), "matrix.harnesses: %v", err)
		}
	}
	if len(m.Models) == 0 && !slices.Contains(rows, rowModel) {
		add("$.matrix", "matrix.models is required (PROVIDER/MODEL, e.g. scripted/demo), or a model in every include row")
	}
	for i, model := range m.Models {
		if p, n, ok := strings.Cut(model, "/"); !ok || p == "" || n == "" {
			add(fmt.Sprintf("$.matrix.models[%d]", i), "model %q: want PROVIDER/MODEL", model)
		}
	}
	if len(m.Tasks) == 0 && !slices.Contains(rows, rowTask) {
		m.Tasks = []string{"c-compiler"}
	}
	m.Tasks = expandDatasets(m.Tasks)
	for field, list := range map[string][]string{"harnesses": m.Harnesses, "models": m.Models, "tasks": m.Tasks} {
		seen := map[string]bool{}
		for i, v := range list {
			if strings.TrimSpace(v) == "" {
				add(fmt.Sprintf("$.matrix.%s[%d]", field, i), "empty value in matrix.%s", field)
			}
			if seen[v] {
				add(fmt.Sprintf("$.matrix.%s[%d]", field, i), "%q is listed twice in matrix.%s (use repeats for more trajectories)", v, field)
			}
			seen[v] = true
		}
	}
	for k, vals := range m.Params {
		if len(vals) == 0 {
			add("$.matrix.params."+k, "matrix.params.%s: give at least one value", k)
		}
		if reserved[k] {
			add("$.matrix.params."+k, "matrix.params.%s: set by the experiment itself (use the spec's own field)", k)
		}
	}
	if m.Repeats == 0 {
		m.Repeats = 1
	}
	if m.Repeats < 0 || m.Repeats > 1000 {
		add("$.matrix.repeats", "repeats %d: want 1..1000", m.Repeats)
	}
	if s.Budget.MaxParts <= 0 {
		add("$.budget.max_parts", "budget.max_parts is required (> 0)")
	}
	if s.Budget.Timeout != "" {
		if d, err := time.ParseDuration(s.Budget.Timeout); err != nil || d <= 0 {
			add("$.budget.timeout", "budget.timeout %q: want a duration such as 30m or 4h", s.Budget.Timeout)
		}
	}
	if s.Budget.StallTimeout != "" {
		if d, err := time.ParseDuration(s.Budget.StallTimeout); err != nil || d <= 0 {
			add("$.budget.stall_timeout", "budget.stall_timeout %q: want a duration such as 30m", s.Budget.StallTimeout)
		}
	}
	if s.Budget.MaxCost < 0 {
		add("$.budget.max_cost", "budget.max_cost must be >= 0")
	}
	if s.Limits.CPUs < 0 {
		add("$.limits.cpus", "limits.cpus must be >= 0")
	}
	if s.Limits.Memory != "" {
		if _, err := ParseMemory(s.Limits.Memory); err != nil {
			add("$.limits.memory", "limits.memory: %v", err)
		}
	}
	if s.Relaunch.MaxAttempts == 0 {
		s.Relaunch.MaxAttempts = 3
	}
	if s.Relaunch.MaxAttempts < 1 || s.Relaunch.MaxAttempts > 20 {
		add("$.relaunch.max_attempts", "relaunch.max_attempts %d: want 1..20", s.Relaunch.MaxAttempts)
	}
	if s.Relaunch.On == nil {
		s.Relaunch.On = slices.Clone(DefaultRelaunchOn)
	}
	for i, r := range s.Relaunch.On {
		switch r {
		case trace.EndAgentError, trace.EndEnvoiError, trace.EndTimeout, trace.EndPartLimit:
		default:
			add(fmt.Sprintf("$.relaunch.on[%d]", i), "relaunch.on: %q is not an end reason that can be relaunched (agent_error, envoi_error, timeout, part_limit)", r)
		}
	}
	for k := range s.Run {
		if reserved[k] {
			add("$.run."+k, "run.%s: set by the experiment itself (use the spec's own field)", k)
		}
	}
	if s.Slurm.MaxActive < 0 {
		add("$.slurm.max_active", "slurm.max_active must be >= 0")
	}
	if s.Kubernetes.Parallelism < 0 {
		add("$.kubernetes.parallelism", "kubernetes.parallelism must be >= 0")
	}
	if s.Evaluate != nil && s.Evaluate.Tasks < 0 {
		add("$.evaluate.tasks", "evaluate.tasks must be >= 0")
	}
	if f := s.Fork; f != nil {
		if strings.TrimSpace(f.From) == "" {
			add("$.fork", "fork.from is required: the trajectory to fork (REF)")
		}
		if len(f.At) == 0 {
			add("$.fork", "fork.at is required: the parts to fork at")
		}
		seen := map[int]bool{}
		for i, p := range f.At {
			if p <= 0 || seen[p] {
				add(fmt.Sprintf("$.fork.at[%d]", i), "fork.at: part %d: want distinct parts > 0", p)
			}
			seen[p] = true
		}
	}
	if len(errs) == 0 {
		for _, c := range s.Cells() {
			if err := store.ValidateID(c.AttemptID(s.Relaunch.MaxAttempts)); err != nil {
				add("$.name", "trajectory id: %v", err)
				break
			}
		}
	}
	return errs
}

// checkInclude checks the include rows: each names the same keys, none
// empty; a key rows name is not also a matrix list; harness and model
// values as in the lists; other keys are traj run flags the experiment
// does not set itself; no row twice.
func (s *Spec) checkInclude() SpecErrors {
	var errs SpecErrors
	add := func(p, format string, args ...any) { errs = append(errs, s.errAt(p, format, args...)) }
	m := &s.Matrix
	keys := m.rowKeys()
	if len(m.Include) > 0 && len(keys) == 0 {
		add("$.matrix.include[0]", "matrix.include: a row names at least one key (harness, model, task or a traj run flag)")
	}
	lists := map[string]bool{rowHarness: len(m.Harnesses) > 0, rowModel: len(m.Models) > 0, rowTask: len(m.Tasks) > 0}
	for _, k := range keys {
		if lists[k] || m.Params[k] != nil {
			add("$.matrix.include", "matrix.include names %s, which the matrix also lists: give its values in the rows only", k)
		}
		if k != rowHarness && k != rowModel && k != rowTask && reserved[k] {
			add("$.matrix.include", "matrix.include: %s is set by the experiment itself (use the spec's own field)", k)
		}
	}
	seen := map[string]int{}
	for i, row := range m.Include {
		at := fmt.Sprintf("$.matrix.include[%d]", i)
		if len(row) != len(keys) {
			add(at, "matrix.include row %d names %d keys; every row names the same keys (%s)", i+1, len(row), strings.Join(keys, ", "))
			continue
		}
		for _, k := range keys {
			v, ok := row[k]
			switch {
			case !ok:
				add(at, "matrix.include row %d lacks %s; every row names the same keys (%s)", i+1, k, strings.Join(keys, ", "))
			case strings.TrimSpace(v) == "":
				add(at, "matrix.include row %d: empty %s", i+1, k)
			case k == rowHarness:
				if _, err := harness.Lookup(v); err != nil {
					add(at, "matrix.include row %d: %v", i+1, err)
				}
			case k == rowModel:
				if p, n, ok := strings.Cut(v, "/"); !ok || p == "" || n == "" {
					add(at, "matrix.include row %d: model %q: want PROVIDER/MODEL", i+1, v)
				}
			}
		}
		id := Cell{Params: row}.Variant()
		if j, dup := seen[id]; dup {
			add(at, "matrix.include row %d repeats row %d (use repeats for more trajectories)", i+1, j+1)
		}
		seen[id] = i
	}
	return errs
}

// reserved are traj run flags the experiment sets from its own fields.
var reserved = map[string]bool{
	"model": true, "task": true, "agent": true, "max-parts": true, "timeout": true, "max-cost": true,
	"trajectory-id": true, "store": true, "stall-timeout": true, "work-dir": true, "resume": true, "sandbox": true,
	"json": true, "quiet": true, "cpus": true, "memory": true, "fork": true, "at-part": true,
}

// Timeout is the budget's timeout, 0 when unset.
func (s *Spec) Timeout() time.Duration {
	d, _ := time.ParseDuration(s.Budget.Timeout)
	return d
}

// Cells expands the matrix in a fixed order (harness, model, task, params
// in key order, repeat). The same spec always gives the same cells and ids.
func (s *Spec) Cells() []Cell {
	keys := make([]string, 0, len(s.Matrix.Params))
	for k := range s.Matrix.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	combos := []map[string]string{{}}
	for _, k := range keys {
		var next []map[string]string
		for _, c := range combos {
			for _, v := range s.Matrix.Params[k] {
				n := make(map[string]string, len(c)+1)
				for ck, cv := range c {
					n[ck] = cv
				}
				n[k] = v
				next = append(next, n)
			}
		}
		combos = next
	}
	rows := s.Matrix.Include
	if len(rows) == 0 {
		rows = []map[string]string{{}}
	}
	or := func(row map[string]string, k string, list []string) []string {
		if v, ok := row[k]; ok {
			return []string{v}
		}
		return list
	}
	withHarness := s.Matrix.HarnessAxis()
	forkAt := []int{0}
	if s.Fork != nil {
		forkAt = s.Fork.At
	}
	var cells []Cell
	for _, row := range rows {
		for _, h := range or(row, rowHarness, s.Matrix.Harnesses) {
			for _, m := range or(row, rowModel, s.Matrix.Models) {
				for _, t := range or(row, rowTask, s.Matrix.Tasks) {
					for _, p := range combos {
						for i := 0; i < len(forkAt)*s.Matrix.Repeats; i++ {
							r := i%s.Matrix.Repeats + 1
							c := Cell{Index: len(cells), Harness: h, Model: m, Task: t, ForkAt: forkAt[i/s.Matrix.Repeats], Repeat: r}
							params := maps.Clone(p)
							for k, v := range row {
								if k != rowHarness && k != rowModel && k != rowTask {
									if params == nil {
										params = map[string]string{}
									}
									params[k] = v
								}
							}
							if len(params) > 0 {
								c.Params = params
							}
							c.ID = cellID(s.Name, c, withHarness)
							cells = append(cells, c)
						}
					}
				}
			}
		}
	}
	return cells
}

// cellID is <name>-<task>-<model>-<hash>-r<repeat>, with the harness
// after the name (<name>-<harness>-<task>-…) when the spec varies it
// (withHarness, Matrix.HarnessAxis): readable, and unique through a hash
// of harness, model, task and parameters (not budgets: a larger budget
// continues the same trajectories).
func cellID(name string, c Cell, withHarness bool) string {
	key, _ := json.Marshal(struct {
		H, M, T string
		P       map[string]string
		F       int `json:",omitempty"`
	}{c.Harness, c.Model, c.Task, c.Params, c.ForkAt})
	sum := sha256.Sum256(key)
	model := c.Model
	if _, n, ok := strings.Cut(model, "/"); ok {
		model = n
	}
	if withHarness {
		name += "-" + slug(c.Harness, 16)
	}
	fork := ""
	if c.ForkAt > 0 {
		fork = fmt.Sprintf("-p%d", c.ForkAt)
	}
	return fmt.Sprintf("%s-%s-%s-%s%s-r%d", name, slug(filepath.Base(c.Task), 24), slug(model, 32), hex.EncodeToString(sum[:3]), fork, c.Repeat)
}

var unsafeRe = regexp.MustCompile(`[^A-Za-z0-9._]+`)

func slug(s string, n int) string {
	s = strings.Trim(unsafeRe.ReplaceAllString(s, "-"), "-.")
	if len(s) > n {
		s = strings.TrimRight(s[:n], "-.")
	}
	if s == "" {
		s = "x"
	}
	return s
}

// ParseMemory reads sizes such as 512M, 8G, 8Gi, 1T (bytes).
func ParseMemory(v string) (int64, error) {
	v = strings.TrimSpace(v)
	num := strings.TrimRight(strings.TrimSuffix(strings.TrimSuffix(v, "i"), "B"), "KMGTkmgt")
	unit := strings.ToUpper(strings.TrimSuffix(strings.TrimSuffix(v[len(num):], "B"), "i"))
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q: want a size such as 512M or 8G", v)
	}
	mult := map[string]int64{"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("%q: unknown unit", v)
	}
	return n * mult, nil
}

// CheckRunFlags checks the spec against the flags `traj run` accepts now
// (harnesses and sandboxes arrive as traj grows): every run and params key
// must be one, and fields that need a flag (--agent for harnesses other
// than opencode, --sandbox, --max-cost) must have it.
func (s *Spec) CheckRunFlags(flags map[string]bool) error {
	var errs SpecErrors
	add := func(p, format string, args ...any) { errs = append(errs, s.errAt(p, format, args...)) }
	for k := range s.Run {
		if !flags[k] {
			add("$.run."+k, "run.%s: traj run has no --%s flag", k, k)
		}
	}
	for k := range s.Matrix.Params {
		if !flags[k] {
			add("$.matrix.params."+k, "matrix.params.%s: traj run has no --%s flag", k, k)
		}
	}
	for _, k := range s.Matrix.rowKeys() {
		if k != rowHarness && k != rowModel && k != rowTask && !flags[k] {
			add("$.matrix.include", "matrix.include: traj run has no --%s flag", k)
		}
	}
	if !flags["agent"] && (s.Matrix.HarnessAxis() || len(s.Matrix.Harnesses) != 1 || s.Matrix.Harnesses[0] != DefaultHarness) {
		add("$.matrix.harnesses", "matrix.harnesses: this traj run has no --agent flag (only %s is available)", DefaultHarness)
	}
	if s.Sandbox != "" && !flags["sandbox"] {
		add("$.sandbox", "sandbox: this traj run has no --sandbox flag")
	}
	if s.Budget.StallTimeout != "" && !flags["stall-timeout"] {
		add("$.budget.stall_timeout", "budget.stall_timeout: this traj run has no --stall-timeout flag")
	}
	if s.Budget.MaxCost > 0 && !flags["max-cost"] {
		add("$.budget.max_cost", "budget.max_cost: this traj run has no --max-cost flag")
	}
	if s.Fork != nil && !flags["fork"] {
		add("$.fork", "fork: this traj run has no --fork flag")
	}
	if len(errs) > 0 {
		sort.SliceStable(errs, func(i, j int) bool { return errs[i].Line < errs[j].Line })
		return errs
	}
	return nil
}

// RunArgs are the traj run arguments of a new attempt of c with id, given
// the flags traj run accepts (limits and the harness are passed only when
// it accepts them).
func (s *Spec) RunArgs(c Cell, id string, flags map[string]bool) []string {
	if c.ForkAt > 0 && s.Fork != nil {
		// The fork inherits the source's harness and task (traj run
		// refuses others).
		args := []string{"run", "--trajectory-id", id, "--fork", s.Fork.From, "--at-part", strconv.Itoa(c.ForkAt),
			"--model", c.Model, "--max-parts", strconv.Itoa(s.Budget.MaxParts)}
		if s.Fork.Prompt != "" {
			args = append(args, "--prompt", s.Fork.Prompt)
		}
		return append(args, s.commonArgs(c, flags)...)
	}
	args := []string{"run", "--trajectory-id", id, "--model", c.Model, "--task", c.Task,
		"--max-parts", strconv.Itoa(s.Budget.MaxParts)}
	if flags["agent"] {
		args = append(args, "--agent", c.Harness)
	}
	return append(args, s.commonArgs(c, flags)...)
}

// ResumeArgs are the traj run arguments continuing trajectory id of c (the
// same settings and parameters: traj run needs e.g. --script again).
func (s *Spec) ResumeArgs(c Cell, id string, flags map[string]bool) []string {
	return append([]string{"run", "--resume", id}, s.commonArgs(c, flags)...)
}

func (s *Spec) commonArgs(c Cell, flags map[string]bool) []string {
	var args []string
	if s.Budget.Timeout != "" {
		args = append(args, "--timeout", s.Budget.Timeout)
	}
	if s.Budget.StallTimeout != "" && flags["stall-timeout"] {
		args = append(args, "--stall-timeout", s.Budget.StallTimeout)
	}
	if s.Budget.MaxCost > 0 && flags["max-cost"] {
		args = append(args, "--max-cost", strconv.FormatFloat(s.Budget.MaxCost, 'f', -1, 64))
	}
	if s.Store != "" {
		args = append(args, "--store", s.Store)
	}
	if s.WorkDir != "" {
		args = append(args, "--work-dir", s.WorkDir)
	}
	if s.Sandbox != "" {
		args = append(args, "--sandbox", s.Sandbox)
	}
	if s.Limits.CPUs > 0 && flags["cpus"] {
		args = append(args, "--cpus", strconv.Itoa(s.Limits.CPUs))
	}
	if s.Limits.Memory != "" && flags["memory"] {
		args = append(args, "--memory", s.Limits.Memory)
	}
	for _, k := range sortedKeys(s.Run) {
		args = append(args, "--"+k+"="+s.Run[k])
	}
	for _, k := range sortedKeys(c.Params) {
		args = append(args, "--"+k+"="+c.Params[k])
	}
	return args
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
