package experiment

import (
	"strings"
	"testing"
)

// TestDatasetAxis: a Harbor dataset folder in matrix.tasks is its task
// folders, a trajectory slot each; a task listed besides its dataset is
// listed twice.
func TestDatasetAxis(t *testing.T) {
	spec := "name: ds\nmatrix:\n  models: [scripted/demo]\n  tasks: [../../environment/harbor/testdata]\nbudget:\n  max_parts: 5\n"
	s, err := Parse("ds.yaml", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	var tasks []string
	for _, c := range s.Cells() {
		tasks = append(tasks, c.Task)
	}
	want := "../../environment/harbor/testdata/c-fizzbuzz,../../environment/harbor/testdata/python-stats,../../environment/harbor/testdata/shell-topwords"
	if got := strings.Join(tasks, ","); got != want {
		t.Fatalf("tasks %s, want %s", got, want)
	}
	twice := strings.Replace(spec, "testdata]", "testdata, ../../environment/harbor/testdata/c-fizzbuzz]", 1)
	if _, err := Parse("ds.yaml", []byte(twice)); err == nil || !strings.Contains(err.Error(), "listed twice") {
		t.Fatalf("a task besides its dataset: %v, want listed twice", err)
	}
}
