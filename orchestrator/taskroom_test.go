package orchestrator

import (
	"testing"

	"github.com/trajlab/traj/orchestrator/launch"
	"github.com/trajlab/traj/orchestrator/task"
	"github.com/trajlab/traj/sandbox/disk"
)

func TestTaskDisk(t *testing.T) {
	tk, err := task.Load("../environment/harbor/testdata/shell-topwords") // storage = "1G"
	if err != nil {
		t.Fatal(err)
	}
	builtin, err := task.Load("c-compiler")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		tk   *task.Task
		in   launch.SandboxOptions
		want int64
	}{
		{"default cap gives way", tk, launch.SandboxOptions{Disk: DefaultDisk, DiskOptional: true}, 1 << 30},
		{"unset", tk, launch.SandboxOptions{}, 1 << 30},
		{"explicit --disk kept", tk, launch.SandboxOptions{Disk: 3 << 30}, 3 << 30},
		{"no cap kept", tk, launch.SandboxOptions{Disk: -1}, -1},
		{"c-compiler unchanged", builtin, launch.SandboxOptions{Disk: DefaultDisk, DiskOptional: true}, DefaultDisk},
	} {
		if got := taskDisk(tc.tk, tc.in).Disk; got != tc.want {
			t.Errorf("%s: disk %d, want %d", tc.name, got, tc.want)
		}
	}
	tk.Storage = 1 << 10
	if got := taskDisk(tk, launch.SandboxOptions{}).Disk; got != disk.MinSize {
		t.Errorf("tiny storage: disk %d, want the smallest image %d", got, disk.MinSize)
	}
}
