package scheduler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/goccy/go-yaml"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	Volumes                                   []corev1.Volume
	Mounts                                    []corev1.VolumeMount
	Resources                                 corev1.ResourceRequirements
	// Secret is a Secret whose keys become the pods' environment.
	Secret string
	// Deadline bounds the whole job, in seconds (0: none).
	Deadline int64
}

// Job is the batch/v1 Job.
func (j IndexedJob) Job() *batchv1.Job {
	mode := batchv1.IndexedCompletion
	completions, parallelism, backoff := j.Completions, j.Parallelism, j.BackoffPerIndex
	container := corev1.Container{
		Name: "traj", Image: j.Image, Command: []string{"traj"}, Args: j.Args,
		VolumeMounts: j.Mounts, Resources: j.Resources,
		Env: []corev1.EnvVar{{Name: "TRAJ_LOG_LEVEL", Value: "info"}},
	}
	if j.Secret != "" {
		container.EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: j.Secret}}}}
	}
	job := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: j.Name, Namespace: j.Namespace, Labels: j.Labels},
		Spec: batchv1.JobSpec{
			CompletionMode:       &mode,
			Completions:          &completions,
			Parallelism:          &parallelism,
			BackoffLimitPerIndex: &backoff,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: j.Labels},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{container},
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
func StoreClaim(claim string) (corev1.Volume, corev1.VolumeMount) {
	return corev1.Volume{Name: "store", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}},
		corev1.VolumeMount{Name: "store", MountPath: StoreMountPath}
}

// ConfigMapVolume is the volume and read-only mount of ConfigMap name at dir.
func ConfigMapVolume(volume, name, dir string) (corev1.Volume, corev1.VolumeMount) {
	return corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}}}},
		corev1.VolumeMount{Name: volume, MountPath: dir, ReadOnly: true}
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
