package main

import "fmt"

// refOrAlias is the trajectory a command names: REF (positional) or the
// --trajectory-id alias kept for scripts; both may be given only when they
// agree.
func refOrAlias(r, alias string) (string, error) {
	if r != "" && alias != "" && r != alias {
		return "", &exitError{2, fmt.Errorf("REF %q and --trajectory-id %q name different trajectories; give one", r, alias)}
	}
	if r != "" {
		return r, nil
	}
	return alias, nil
}
