package main

import (
	"fmt"

	"github.com/trajlab/traj/replay/labels"
)

// labelFlags set the failure labels' thresholds (replay/labels.Options),
// for `traj report` and `traj replay evaluate` alike: one flag, not one
// per threshold.
type labelFlags struct {
	Labels map[string]string `name:"labels" placeholder:"NAME=VALUE;…" help:"Failure-label thresholds (defaults: plateau_parts=50;plateau_hours=2;stall_minutes=15;regression_rounds=2;improving_parts=20;lost_margin=0;gap_threshold=0.25)."`
}

func (f labelFlags) options() (labels.Options, error) {
	o, err := labels.ParseSettings(f.Labels)
	if err != nil {
		return o, &exitError{2, fmt.Errorf("--labels: %w", err)}
	}
	return o, nil
}
