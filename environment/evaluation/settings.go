package evaluation

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/trajlab/traj/trace"
)

// Settings are what a task decides about how its trees are evaluated,
// beyond the environment: recorded as fields of the trace's environment
// (trace.EnvironmentInfo) and read back from there by every later
// evaluation, so a replay scores a tree as the run did.
type Settings struct {
	// Artifacts are what the task's build produces and its compiles need
	// (paths relative to the tree, a trailing "/" for a folder; the
	// C-compiler task: "cc"): every compile is shown only these
	// (replay/evalbox).
	Artifacts []string
	// DenyCCompiler takes every C compiler out of every action of an
	// evaluation (sandbox/deny.go); it needs bwrap or container
	// (CheckProvider).
	DenyCCompiler bool
}

// Record writes s into the environment a trace records.
func (s Settings) Record(info *trace.EnvironmentInfo) {
	info.Artifacts = slices.Clone(s.Artifacts)
	info.DenyCCompiler = s.DenyCCompiler
}

// Recorded reads the settings a trace recorded: its environment's fields,
// or, for a trace recorded before they existed, the marks Version put on
// its environment version (ParseVersion). A run records both: the
// version it records is the one that keys its results.
func Recorded(info *trace.EnvironmentInfo) Settings {
	if info == nil {
		return Settings{}
	}
	if len(info.Artifacts) > 0 || info.DenyCCompiler {
		return Settings{Artifacts: slices.Clone(info.Artifacts), DenyCCompiler: info.DenyCCompiler}
	}
	return ParseVersion(info.Version)
}

// ArtifactsMark is the cache key version's mark for evaluations whose
// compiles are shown only the build's artifacts: their results can
// differ from a whole-tree evaluation's, so the cache key must too.
const ArtifactsMark = "+artifacts="

// DenyCCompilerVersion marks a cache key version whose evaluations take
// the C compiler out (sandbox/deny.go): results differ, so the key must
// too.
const DenyCCompilerVersion = "+deny-c-compiler"

// SandboxMark ends the version an evaluator keys its results by: the
// provider whose rooms scored them (replay/evalbox's Evaluator.Version).
const SandboxMark = "+sandbox="

// Version is the environment version that keys a task's results: the
// environment's own, marked with the task's artifacts (ArtifactsMark)
// and with DenyCCompilerVersion last. Traces recorded before Settings
// were fields carry it as their environment version.
func Version(env string, s Settings) string {
	v := env
	if len(s.Artifacts) > 0 {
		v += ArtifactsMark + strings.Join(s.Artifacts, ",")
	}
	if s.DenyCCompiler {
		v += DenyCCompilerVersion
	}
	return v
}

// ParseVersion reads back what Version marked on an environment version
// (an old trace's, or an evaluator's, SandboxMark and all).
func ParseVersion(v string) Settings {
	var s Settings
	if i := strings.LastIndex(v, SandboxMark); i >= 0 {
		v = v[:i]
	}
	v, s.DenyCCompiler = strings.CutSuffix(v, DenyCCompilerVersion)
	if i := strings.LastIndex(v, ArtifactsMark); i >= 0 {
		s.Artifacts = strings.Split(v[i+len(ArtifactsMark):], ",")
		if CheckArtifacts(s.Artifacts) != nil {
			s.Artifacts = nil
		}
	}
	return s
}

// artifactName is what a declared artifact may be called: a path
// relative to the tree, "/"-separated, a trailing "/" for a folder. The
// character set keeps the list printable inside a version (Version).
var artifactName = regexp.MustCompile(`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*/?$`)

// CheckArtifacts says whether names is a valid artifact list: relative
// paths inside the tree, no "." or ".." component, no duplicates.
func CheckArtifacts(names []string) error {
	seen := map[string]bool{}
	for _, n := range names {
		if !artifactName.MatchString(n) {
			return fmt.Errorf("artifact %q: want a path relative to the tree (letters, digits, _ . -, / between parts; a trailing / for a folder)", n)
		}
		clean := strings.TrimSuffix(n, "/")
		for _, c := range strings.Split(clean, "/") {
			if c == "." || c == ".." {
				return fmt.Errorf("artifact %q: no . or .. parts", n)
			}
		}
		if seen[clean] {
			return fmt.Errorf("artifact %q is listed twice", n)
		}
		seen[clean] = true
	}
	return nil
}
