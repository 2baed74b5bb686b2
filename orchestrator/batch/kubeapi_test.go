package batch

import (
	"bytes"
	"encoding/json"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestKubeAPIMatchesUpstream: every object traj writes decodes strictly
// (no unknown field) into k8s.io/api's own types, and those types encode
// it to the same bytes: the manifest is what the upstream types would
// have written.
func TestKubeAPIMatchesUpstream(t *testing.T) {
	store, storeMount := StoreClaim("traj-runs")
	spec, specMount := ConfigMapVolume("spec", "traj-x-spec", "/etc/traj")
	full := IndexedJob{Name: "traj-x", Namespace: "research", Labels: map[string]string{"app.kubernetes.io/name": "traj", "b": "2"},
		Image: "registry.example/traj:1", Args: []string{"experiment", "task", "/etc/traj/spec.yaml"},
		Completions: 6, Parallelism: 4, BackoffPerIndex: 2,
		Volumes: []Volume{spec, store}, Mounts: []VolumeMount{specMount, storeMount},
		Resources: Resources{Limits: map[string]string{ResourceCPU: CPUQuantity(2), ResourceMemory: MemoryQuantity(4 << 30)},
			Requests: map[string]string{ResourceCPU: CPUQuantity(2), ResourceMemory: MemoryQuantity(4 << 30)}},
		Secret: "model-keys", Deadline: 14400}
	bare := IndexedJob{Name: "traj-y", Image: "i", Args: []string{"replay"}, Completions: 1, Parallelism: 1}
	cm := &ConfigMap{TypeMeta: TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: ObjectMeta{Name: "traj-x-spec", Namespace: "research", Labels: full.Labels},
		Data:       map[string]string{"spec.yaml": "name: x\n"}}
	for name, tc := range map[string]struct {
		ours     any
		upstream any
	}{
		"full job":   {full.Job(), &batchv1.Job{}},
		"bare job":   {bare.Job(), &batchv1.Job{}},
		"config map": {cm, &corev1.ConfigMap{}},
	} {
		t.Run(name, func(t *testing.T) {
			ours, err := json.Marshal(tc.ours)
			if err != nil {
				t.Fatal(err)
			}
			dec := json.NewDecoder(bytes.NewReader(ours))
			dec.DisallowUnknownFields()
			if err := dec.Decode(tc.upstream); err != nil {
				t.Fatalf("k8s.io/api does not read %s: %v", ours, err)
			}
			theirs, err := json.Marshal(tc.upstream)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(ours, theirs) {
				t.Errorf("ours:\n%s\nk8s.io/api's:\n%s", ours, theirs)
			}
		})
	}
}

// TestQuantities: CPU and memory quantities are written as the API's
// resource.Quantity writes them.
func TestQuantities(t *testing.T) {
	for _, n := range []int{1, 2, 16, 128} {
		if got, want := CPUQuantity(n), resource.MustParse(CPUQuantity(n)); got != want.String() {
			t.Errorf("CPUQuantity(%d) = %q, want %q", n, got, want.String())
		}
	}
	for _, b := range []int64{0, 1, 512, 1023, 1024, 1536, 1 << 20, 3 << 20, 1<<20 + 1, 4 << 30, 4_000_000_000, 512 << 40, 3 << 50, 1 << 60, 5 << 60} {
		if got, want := MemoryQuantity(b), resource.NewQuantity(b, resource.BinarySI).String(); got != want {
			t.Errorf("MemoryQuantity(%d) = %q, want %q", b, got, want)
		}
	}
}
