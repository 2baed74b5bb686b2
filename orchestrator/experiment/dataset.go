package experiment

import "github.com/trajlab/traj/environment/harbor"

// expandDatasets replaces each Harbor dataset folder among tasks (a
// folder of task folders, harbor.Dataset) by its task folders, so a
// dataset is the task axis of an experiment.
func expandDatasets(tasks []string) []string {
	var out []string
	for _, t := range tasks {
		if list, ok := harbor.Dataset(t); ok {
			out = append(out, list...)
			continue
		}
		out = append(out, t)
	}
	return out
}
