package experiment

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	batchv1 "k8s.io/api/batch/v1"

	"github.com/trajlab/traj/orchestrator/batch"
)

var update = flag.Bool("update", false, "rewrite golden files")

const kubeSpec = `name: Sweep_1
store: s3://bucket/traj
matrix:
  models: [scripted/demo, openai/gpt-5]
  repeats: 3
budget:
  max_parts: 100
  timeout: 1h
limits:
  cpus: 2
  memory: 4G
relaunch:
  max_attempts: 2
kubernetes:
  image: registry.example/traj:v2
  namespace: research
  parallelism: 4
  secret: model-keys
`

func TestKubeManifest(t *testing.T) {
	s, err := Parse("k.yaml", []byte(kubeSpec))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := KubeManifest(s, []byte(kubeSpec))
	if err != nil {
		t.Fatal(err)
	}
	j := objs.Job
	if j.Name != "traj-sweep-1" || j.Namespace != "research" {
		t.Errorf("job name %q in %q", j.Name, j.Namespace)
	}
	if *j.Spec.CompletionMode != batch.CompletionIndexed || *j.Spec.Completions != 6 || *j.Spec.Parallelism != 4 {
		t.Errorf("indexed job: mode %v completions %d parallelism %d", *j.Spec.CompletionMode, *j.Spec.Completions, *j.Spec.Parallelism)
	}
	if *j.Spec.BackoffLimitPerIndex != 2 {
		t.Errorf("backoff per index %d", *j.Spec.BackoffLimitPerIndex)
	}
	if want := int64(3600 * 2 * 2); *j.Spec.ActiveDeadlineSeconds != want {
		t.Errorf("deadline %d, want %d", *j.Spec.ActiveDeadlineSeconds, want)
	}
	pod := j.Spec.Template.Spec
	if pod.RestartPolicy != batch.RestartNever || len(pod.Containers) != 1 {
		t.Fatalf("pod: %+v", pod)
	}
	c := pod.Containers[0]
	if c.Image != "registry.example/traj:v2" || strings.Join(append(c.Command, c.Args...), " ") != "traj experiment task /etc/traj/spec.yaml" {
		t.Errorf("container runs %v %v from %s", c.Command, c.Args, c.Image)
	}
	if q := c.Resources.Limits[batch.ResourceMemory]; q != "4Gi" {
		t.Errorf("memory limit %s", q)
	}
	if q := c.Resources.Requests[batch.ResourceCPU]; q != "2" {
		t.Errorf("cpu request %s", q)
	}
	if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef.Name != "model-keys" {
		t.Errorf("envFrom %+v", c.EnvFrom)
	}
	if objs.ConfigMap.Data["spec.yaml"] != kubeSpec || pod.Volumes[0].ConfigMap.Name != objs.ConfigMap.Name {
		t.Errorf("spec not mounted from the config map")
	}

	// The YAML decodes back into the same typed objects, and is golden.
	y, err := objs.YAML()
	if err != nil {
		t.Fatal(err)
	}
	docs := bytes.Split(y, []byte("---\n"))
	if len(docs) != 2 {
		t.Fatalf("%d documents", len(docs))
	}
	// As kubectl reads it: YAML to JSON, then the API types' decoders.
	var back batchv1.Job
	js, err := yaml.YAMLToJSON(docs[1])
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if back.Kind != "Job" || back.APIVersion != "batch/v1" || *back.Spec.Completions != 6 || back.Spec.Template.Spec.Containers[0].Image != c.Image {
		t.Errorf("round trip: %+v", back.Spec)
	}
	golden := filepath.Join("testdata", "kube-manifest.yaml")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, y, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(y, want) {
		t.Errorf("manifest differs from %s (go test -update to accept):\n%s", golden, y)
	}
}

func TestKubeManifestNeeds(t *testing.T) {
	for name, tc := range map[string]struct{ spec, want string }{
		"no image":               {strings.Replace(kubeSpec, "  image: registry.example/traj:v2\n", "", 1), "k.yaml:15: kubernetes.image is required"},
		"folder store, no claim": {strings.Replace(kubeSpec, "s3://bucket/traj", "./runs", 1), "store_claim"},
	} {
		t.Run(name, func(t *testing.T) {
			s, err := Parse("k.yaml", []byte(tc.spec))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := KubeManifest(s, []byte(tc.spec)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
	s, err := Parse("k.yaml", []byte(strings.Replace(kubeSpec, "s3://bucket/traj", "./runs", 1)+"  store_claim: traj-runs\n"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := KubeManifest(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := objs.Job.Spec.Template.Spec.Containers[0]
	if !strings.Contains(strings.Join(c.Args, " "), "--store /runs") || c.VolumeMounts[1].MountPath != "/runs" ||
		objs.Job.Spec.Template.Spec.Volumes[1].PersistentVolumeClaim.ClaimName != "traj-runs" {
		t.Errorf("folder store not mounted: %v %+v", c.Args, c.VolumeMounts)
	}
}
