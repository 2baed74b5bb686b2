package evaluate

import (
	"bytes"
	"encoding/json"

	"github.com/trajlab/traj/replay"
	"github.com/trajlab/traj/replay/labels"
	"github.com/trajlab/traj/replay/report"
	"github.com/trajlab/traj/trace/atomicfile"
)

// Relabel computes the labels of the trace at path against ev and puts
// them in ev; changed says whether they differ from what ev held.
func Relabel(path string, ev *replay.Output, o labels.Options) (changed bool, err error) {
	ls, err := labels.ComputeFile(path, ev, o)
	if err != nil {
		return false, err
	}
	data, err := labels.Marshal(ls, o)
	if err != nil {
		return false, err
	}
	var old bytes.Buffer
	if len(ev.Labels) > 0 {
		if err := json.Compact(&old, ev.Labels); err != nil {
			old.Reset()
		}
	}
	ev.Labels = data
	return !bytes.Equal(old.Bytes(), data), nil
}

// writeHTML writes the HTML report r to path, whole or not at all.
func writeHTML(path string, r report.Report) error {
	var b bytes.Buffer
	if err := report.WriteHTML(&b, r); err != nil {
		return err
	}
	return atomicfile.WriteBytes(path, b.Bytes())
}
