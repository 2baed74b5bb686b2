package trace

import "strings"

// AgentID is the trace's agent field read: the harness that recorded the
// trajectory and its version. The field is "name@version"
// ("opencode@1.18.33", "claude-code@2.1.330"), or just "name" when the
// version was not known; traces of the original recorder say "opencode"
// or nothing.
type AgentID struct {
	// Name is the harness ("" when the trace names none).
	Name string
	// Version is the harness's version ("" when not recorded).
	Version string
}

// ParseAgent reads the trace's agent field; it is the one reader of that
// format, for every command that shows or exports a trajectory.
func ParseAgent(field string) AgentID {
	name, version, _ := strings.Cut(strings.TrimSpace(field), "@")
	return AgentID{Name: name, Version: version}
}

// String is the trace's agent field for a: "name@version", or "name"
// without a version.
func (a AgentID) String() string {
	if a.Version == "" {
		return a.Name
	}
	return a.Name + "@" + a.Version
}
