package experiment

import (
	"os"

	"github.com/trajlab/traj/orchestrator/batch"
	"github.com/trajlab/traj/trace/store/location"
)

// Kubernetes executor: a manifest, not a client. The experiment becomes a
// ConfigMap holding the spec and an Indexed Job with one completion per
// cell; pod i runs `traj experiment task /etc/traj/spec.yaml` and the task
// takes its cell from JOB_COMPLETION_INDEX, exactly as a Slurm array task
// takes it from SLURM_ARRAY_TASK_ID. Applying the manifest again after
// failures reruns every index, and each pod skips a slot that is done.

const (
	specFileName = "spec.yaml"
	// StoreMountPath is where a folder store's volume claim is mounted.
	StoreMountPath = batch.StoreMountPath
)

// KubeObjects are the typed objects of an experiment's manifest.
type KubeObjects = batch.Objects

// KubeManifest builds the experiment's ConfigMap and Indexed Job. specText
// is the spec file's content, mounted into every pod.
func KubeManifest(s *Spec, specText []byte) (*KubeObjects, error) {
	a, err := KubeArray(s, specText)
	if err != nil {
		return nil, err
	}
	return batch.Manifest(a)
}

// KubeArray is the experiment as a Kubernetes array: one index per cell.
func KubeArray(s *Spec, specText []byte) (batch.Array, error) {
	k := s.Kubernetes
	if k.Image == "" {
		return batch.Array{}, s.errAt("$.kubernetes", "kubernetes.image is required for a Kubernetes manifest (an image with traj, the harness and the test fixtures)")
	}
	storeURL := location.Choose(s.Store, os.Getenv)
	podStore, claim, err := batch.PodStore(storeURL, k.StoreClaim)
	if err != nil {
		return batch.Array{}, s.errAt("$.kubernetes", "the store %q is a folder: pods need kubernetes.store_claim (a ReadWriteMany PersistentVolumeClaim) or an s3:// store", storeURL)
	}
	args := []string{"experiment", "task", batch.FilesDir + "/" + specFileName}
	if claim != "" {
		args = append(args, "--store", podStore)
	}
	res, err := podResources(s)
	if err != nil {
		return batch.Array{}, err
	}
	cells := len(s.Cells())
	parallelism := cells
	if k.Parallelism > 0 {
		parallelism = min(k.Parallelism, cells)
	}
	// A pod that dies (node loss, eviction) is retried: the task resumes.
	a := batch.Array{Executor: batch.Kubernetes, Name: "traj-" + s.Name, Tasks: cells, Command: args,
		Kube: batch.Kube{Namespace: k.Namespace, Component: "experiment",
			Labels: map[string]string{"traj.dev/experiment": batch.KubeName(s.Name)}, Image: k.Image,
			Files: map[string]string{specFileName: string(specText)}, FilesName: "spec", StoreClaim: claim,
			Parallelism: parallelism, BackoffPerIndex: s.Relaunch.MaxAttempts, Resources: res, Secret: k.Secret}}
	if d := s.Timeout(); d > 0 {
		// Every index may take the budget, attempts included, parallelism at a time.
		waves := (int64(cells) + int64(parallelism) - 1) / int64(parallelism)
		a.Kube.Deadline = int64(d.Seconds()) * int64(s.Relaunch.MaxAttempts) * waves
	}
	return a, nil
}

// podResources are a pod's requests and limits from the spec's limits.
func podResources(s *Spec) (batch.Resources, error) {
	res := batch.Resources{}
	if s.Limits.CPUs > 0 || s.Limits.Memory != "" {
		res.Requests, res.Limits = map[string]string{}, map[string]string{}
	}
	if s.Limits.CPUs > 0 {
		q := batch.CPUQuantity(s.Limits.CPUs)
		res.Requests[batch.ResourceCPU], res.Limits[batch.ResourceCPU] = q, q
	}
	if s.Limits.Memory != "" {
		m, err := ParseMemory(s.Limits.Memory)
		if err != nil {
			return res, err
		}
		q := batch.MemoryQuantity(m)
		res.Requests[batch.ResourceMemory], res.Limits[batch.ResourceMemory] = q, q
	}
	return res, nil
}
