package experiment

import (
	"os"

	"github.com/trajlab/traj/orchestrator/scheduler"
	"github.com/trajlab/traj/trace/store/location"
)

// Kubernetes executor: a manifest, not a client. The experiment becomes a
// ConfigMap holding the spec and an Indexed Job with one completion per
// cell; pod i runs `traj experiment task /etc/traj/spec.yaml` and the task
// takes its cell from JOB_COMPLETION_INDEX, exactly as a Slurm array task
// takes it from SLURM_ARRAY_TASK_ID. Applying the manifest again after
// failures reruns every index, and each pod skips a slot that is done.

const (
	specMountDir = "/etc/traj"
	specFileName = "spec.yaml"
	// StoreMountPath is where a folder store's volume claim is mounted.
	StoreMountPath = scheduler.StoreMountPath
)

// KubeObjects are the typed objects of an experiment's manifest.
type KubeObjects struct {
	ConfigMap *scheduler.ConfigMap
	Job       *scheduler.Job
}

// KubeManifest builds the experiment's ConfigMap and Indexed Job. specText
// is the spec file's content, mounted into every pod.
func KubeManifest(s *Spec, specText []byte) (*KubeObjects, error) {
	k := s.Kubernetes
	if k.Image == "" {
		return nil, s.errAt("$.kubernetes", "kubernetes.image is required for a Kubernetes manifest (an image with traj, the harness and the test fixtures)")
	}
	storeURL := location.Choose(s.Store, os.Getenv)
	local := location.Scheme(storeURL) == "" || location.Scheme(storeURL) == "file"
	if local && k.StoreClaim == "" {
		return nil, s.errAt("$.kubernetes", "the store %q is a folder: pods need kubernetes.store_claim (a ReadWriteMany PersistentVolumeClaim) or an s3:// store", storeURL)
	}
	name := scheduler.KubeName("traj-" + s.Name)
	labels := map[string]string{"app.kubernetes.io/name": "traj", "app.kubernetes.io/component": "experiment", "traj.dev/experiment": scheduler.KubeName(s.Name)}
	cm := scheduler.NewConfigMap(name+"-spec", k.Namespace, labels, map[string]string{specFileName: string(specText)})
	cells := len(s.Cells())
	completions := int32(cells)
	parallelism := int32(cells)
	if k.Parallelism > 0 {
		parallelism = int32(min(k.Parallelism, cells))
	}
	// A pod that dies (node loss, eviction) is retried: the task resumes.
	perIndex := int32(s.Relaunch.MaxAttempts)
	args := []string{"experiment", "task", specMountDir + "/" + specFileName}
	vol, mount := scheduler.ConfigMapVolume("spec", cm.Name, specMountDir)
	volumes, mounts := []scheduler.Volume{vol}, []scheduler.VolumeMount{mount}
	if local {
		args = append(args, "--store", StoreMountPath)
		vol, mount := scheduler.StoreClaim(k.StoreClaim)
		volumes, mounts = append(volumes, vol), append(mounts, mount)
	}
	res, err := podResources(s)
	if err != nil {
		return nil, err
	}
	ij := scheduler.IndexedJob{Name: name, Namespace: k.Namespace, Labels: labels, Image: k.Image, Args: args,
		Completions: completions, Parallelism: parallelism, BackoffPerIndex: perIndex,
		Volumes: volumes, Mounts: mounts, Resources: res, Secret: k.Secret}
	if d := s.Timeout(); d > 0 {
		// Every index may take the budget, attempts included, parallelism at a time.
		waves := (int64(cells) + int64(parallelism) - 1) / int64(parallelism)
		ij.Deadline = int64(d.Seconds()) * int64(s.Relaunch.MaxAttempts) * waves
	}
	job := ij.Job()
	return &KubeObjects{ConfigMap: cm, Job: job}, nil
}

// YAML renders the objects as one multi-document YAML manifest for
// kubectl apply -f.
func (o *KubeObjects) YAML() ([]byte, error) { return scheduler.YAML(o.ConfigMap, o.Job) }

// podResources are a pod's requests and limits from the spec's limits.
func podResources(s *Spec) (scheduler.Resources, error) {
	res := scheduler.Resources{}
	if s.Limits.CPUs > 0 || s.Limits.Memory != "" {
		res.Requests, res.Limits = map[string]string{}, map[string]string{}
	}
	if s.Limits.CPUs > 0 {
		q := scheduler.CPUQuantity(s.Limits.CPUs)
		res.Requests[scheduler.ResourceCPU], res.Limits[scheduler.ResourceCPU] = q, q
	}
	if s.Limits.Memory != "" {
		m, err := ParseMemory(s.Limits.Memory)
		if err != nil {
			return res, err
		}
		q := scheduler.MemoryQuantity(m)
		res.Requests[scheduler.ResourceMemory], res.Limits[scheduler.ResourceMemory] = q, q
	}
	return res, nil
}
