package scheduler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/goccy/go-yaml"
)

// Kubernetes: a manifest, not a client. Pod i of an Indexed Job runs
// `traj ARGS…` and takes its index from JOB_COMPLETION_INDEX.

// StoreMountPath is where a folder store's volume claim is mounted.
const StoreMountPath = "/runs"

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
