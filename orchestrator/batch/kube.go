package batch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/trajlab/traj/trace/store/location"
)

// Kubernetes: a manifest, not a client. Pod i of an Indexed Job runs
// `traj ARGS…` and takes its index from JOB_COMPLETION_INDEX.

const (
	// StoreMountPath is where a folder store's volume claim is mounted.
	StoreMountPath = "/runs"
	// FilesDir is where an array's files (Kube.Files) are mounted.
	FilesDir = "/etc/traj"
)

// Kube are an array's Kubernetes settings.
type Kube struct {
	Namespace string
	// Component and Labels label the objects, beside
	// app.kubernetes.io/name=traj.
	Component string
	Labels    map[string]string
	// Image holds traj and what the pods run (harness, test fixtures).
	Image string
	// Files become a ConfigMap <name>-<FilesName> mounted read-only at
	// FilesDir (the spec, the trees file).
	Files     map[string]string
	FilesName string
	// StoreClaim is a folder store's PersistentVolumeClaim, mounted at
	// StoreMountPath; "" for an s3:// store (see PodStore).
	StoreClaim string
	// Parallelism bounds the pods running at once (0: every task).
	Parallelism int
	// BackoffPerIndex is how often a failed index is retried.
	BackoffPerIndex int
	Resources       Resources
	// Secret is a Secret whose keys become the pods' environment.
	Secret string
	// Deadline bounds the whole job, in seconds (0: none).
	Deadline int64
}

// Objects are the typed objects of an array's manifest.
type Objects struct {
	ConfigMap *ConfigMap
	Job       *Job
}

// Manifest builds a Kubernetes array's objects: the ConfigMap of its
// files and its Indexed Job.
func Manifest(a Array) (*Objects, error) {
	k := a.Kube
	if k.Image == "" {
		return nil, fmt.Errorf("kubernetes manifest %s: an image is required", a.Name)
	}
	if a.Tasks < 1 {
		return nil, fmt.Errorf("kubernetes manifest %s: no tasks", a.Name)
	}
	name := KubeName(a.Name)
	labels := map[string]string{"app.kubernetes.io/name": "traj", "app.kubernetes.io/component": k.Component}
	for key, v := range k.Labels {
		labels[key] = v
	}
	cm := NewConfigMap(name+"-"+k.FilesName, k.Namespace, labels, k.Files)
	vol, mount := ConfigMapVolume(k.FilesName, cm.Name, FilesDir)
	volumes, mounts := []Volume{vol}, []VolumeMount{mount}
	if k.StoreClaim != "" {
		vol, mount := StoreClaim(k.StoreClaim)
		volumes, mounts = append(volumes, vol), append(mounts, mount)
	}
	parallelism := a.Tasks
	if k.Parallelism > 0 {
		parallelism = min(k.Parallelism, a.Tasks)
	}
	job := IndexedJob{Name: name, Namespace: k.Namespace, Labels: labels, Image: k.Image, Args: a.Command,
		Completions: int32(a.Tasks), Parallelism: int32(parallelism), BackoffPerIndex: int32(k.BackoffPerIndex),
		Volumes: volumes, Mounts: mounts, Resources: k.Resources, Secret: k.Secret, Deadline: k.Deadline}.Job()
	return &Objects{ConfigMap: cm, Job: job}, nil
}

// YAML renders the objects as one manifest for kubectl apply -f.
func (o *Objects) YAML() ([]byte, error) { return YAML(o.ConfigMap, o.Job) }

// PodStore is the store URL the pods use for storeURL, and the claim to
// mount: a folder store is mounted from claim at StoreMountPath (no claim
// is an error), any other is used as it is.
func PodStore(storeURL, claim string) (string, string, error) {
	if s := location.Scheme(storeURL); s != "" && s != "file" {
		return storeURL, "", nil
	}
	if claim == "" {
		return "", "", fmt.Errorf("the store %q is a folder: pods need a ReadWriteMany PersistentVolumeClaim holding it, or an s3:// store", storeURL)
	}
	return StoreMountPath, claim, nil
}

// IndexedJob describes an Indexed Job of `traj` pods.
type IndexedJob struct {
	Name, Namespace string
	Labels          map[string]string
	// Image holds traj and what the pods run (harness, test fixtures).
	Image string
	// Args follow `traj` in each pod.
	Args []string
	// Completions is the number of indices; Parallelism how many run at
	// once; BackoffPerIndex how often a failed index is retried.
	Completions, Parallelism, BackoffPerIndex int32
	Volumes                                   []Volume
	Mounts                                    []VolumeMount
	Resources                                 Resources
	// Secret is a Secret whose keys become the pods' environment.
	Secret string
	// Deadline bounds the whole job, in seconds (0: none).
	Deadline int64
}

// Job is the batch/v1 Job.
func (j IndexedJob) Job() *Job {
	mode := CompletionIndexed
	completions, parallelism, backoff := j.Completions, j.Parallelism, j.BackoffPerIndex
	container := Container{
		Name: "traj", Image: j.Image, Command: []string{"traj"}, Args: j.Args,
		VolumeMounts: j.Mounts, Resources: j.Resources,
		Env: []EnvVar{{Name: "TRAJ_LOG_LEVEL", Value: "info"}},
	}
	if j.Secret != "" {
		container.EnvFrom = []EnvFrom{{SecretRef: &LocalObjectReference{Name: j.Secret}}}
	}
	job := &Job{
		TypeMeta:   TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: ObjectMeta{Name: j.Name, Namespace: j.Namespace, Labels: j.Labels},
		Spec: JobSpec{
			CompletionMode:       &mode,
			Completions:          &completions,
			Parallelism:          &parallelism,
			BackoffLimitPerIndex: &backoff,
			Template: PodTemplateSpec{
				ObjectMeta: ObjectMeta{Labels: j.Labels},
				Spec: PodSpec{
					RestartPolicy: RestartNever,
					Containers:    []Container{container},
					Volumes:       j.Volumes,
				},
			},
		},
	}
	if j.Deadline > 0 {
		d := j.Deadline
		job.Spec.ActiveDeadlineSeconds = &d
	}
	return job
}

// StoreClaim is the volume and mount of a folder store's
// PersistentVolumeClaim, mounted at StoreMountPath.
func StoreClaim(claim string) (Volume, VolumeMount) {
	return Volume{Name: "store", PersistentVolumeClaim: &PersistentVolumeClaim{ClaimName: claim}},
		VolumeMount{Name: "store", MountPath: StoreMountPath}
}

// ConfigMapVolume is the volume and read-only mount of ConfigMap name at dir.
func ConfigMapVolume(volume, name, dir string) (Volume, VolumeMount) {
	return Volume{Name: volume, ConfigMap: &LocalObjectReference{Name: name}},
		VolumeMount{Name: volume, MountPath: dir, ReadOnly: true}
}

var dnsUnsafe = regexp.MustCompile(`[^a-z0-9-]+`)

// KubeName is a DNS-1123 label from s (at most 63 characters).
func KubeName(s string) string {
	n := strings.Trim(dnsUnsafe.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if len(n) > 63 {
		n = strings.TrimRight(n[:63], "-")
	}
	return n
}

// YAML renders objects as one multi-document YAML manifest for
// kubectl apply -f.
func YAML(objs ...any) ([]byte, error) {
	var out bytes.Buffer
	for i, obj := range objs {
		j, err := json.Marshal(obj)
		if err != nil {
			return nil, fmt.Errorf("encode manifest: %w", err)
		}
		y, err := yaml.JSONToYAML(j)
		if err != nil {
			return nil, fmt.Errorf("encode manifest: %w", err)
		}
		if i > 0 {
			out.WriteString("---\n")
		}
		out.Write(y)
	}
	return out.Bytes(), nil
}
