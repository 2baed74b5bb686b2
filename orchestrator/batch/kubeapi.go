package batch

import "strconv"

// The few Kubernetes API objects traj writes (a batch/v1 Job, a v1
// ConfigMap), as their own structs: the fields traj sets, with the API's
// JSON names, in the API's field order, so a manifest is the bytes
// k8s.io/api's types give (TestKubeAPIMatchesUpstream decodes each one
// strictly into those types and compares). Linking k8s.io/api and
// apimachinery cost every traj process about 14 ms of start-up (their
// package initialisation and the pages it touches) for a manifest
// generator.

// TypeMeta is an object's kind and API version.
type TypeMeta struct {
	Kind       string `json:"kind,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
}

// ObjectMeta is an object's name, namespace and labels.
type ObjectMeta struct {
	Name      string            `json:"name,omitempty"`
	Namespace string            `json:"namespace,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
}

// ConfigMap is a v1 ConfigMap.
type ConfigMap struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Data       map[string]string `json:"data,omitempty"`
}

// NewConfigMap is the v1 ConfigMap name in namespace holding data.
func NewConfigMap(name, namespace string, labels, data map[string]string) *ConfigMap {
	return &ConfigMap{TypeMeta: TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: ObjectMeta{Name: name, Namespace: namespace, Labels: labels}, Data: data}
}

// Job is a batch/v1 Job. Status is always empty (the API writes it).
type Job struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       JobSpec   `json:"spec,omitempty"`
	Status     JobStatus `json:"status,omitempty"`
}

// JobStatus is empty in a manifest.
type JobStatus struct{}

// CompletionIndexed is the Indexed completion mode: pod i gets
// JOB_COMPLETION_INDEX=i.
const CompletionIndexed = "Indexed"

// JobSpec is a Job's spec.
type JobSpec struct {
	Parallelism           *int32          `json:"parallelism,omitempty"`
	Completions           *int32          `json:"completions,omitempty"`
	ActiveDeadlineSeconds *int64          `json:"activeDeadlineSeconds,omitempty"`
	BackoffLimitPerIndex  *int32          `json:"backoffLimitPerIndex,omitempty"`
	Template              PodTemplateSpec `json:"template"`
	CompletionMode        *string         `json:"completionMode,omitempty"`
}

// PodTemplateSpec is the pod a Job starts.
type PodTemplateSpec struct {
	ObjectMeta `json:"metadata,omitempty"`
	Spec       PodSpec `json:"spec,omitempty"`
}

// RestartNever: a failed pod is not restarted in place (the Job retries
// its index).
const RestartNever = "Never"

// PodSpec is a pod's volumes and containers.
type PodSpec struct {
	Volumes       []Volume    `json:"volumes,omitempty"`
	Containers    []Container `json:"containers"`
	RestartPolicy string      `json:"restartPolicy,omitempty"`
}

// Container is one container of a pod.
type Container struct {
	Name         string        `json:"name"`
	Image        string        `json:"image,omitempty"`
	Command      []string      `json:"command,omitempty"`
	Args         []string      `json:"args,omitempty"`
	EnvFrom      []EnvFrom     `json:"envFrom,omitempty"`
	Env          []EnvVar      `json:"env,omitempty"`
	Resources    Resources     `json:"resources,omitempty"`
	VolumeMounts []VolumeMount `json:"volumeMounts,omitempty"`
}

// EnvFrom makes a Secret's keys environment variables.
type EnvFrom struct {
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
}

// LocalObjectReference names an object in the pod's namespace.
type LocalObjectReference struct {
	Name string `json:"name,omitempty"`
}

// EnvVar is one environment variable.
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value,omitempty"`
}

// Resource names.
const (
	ResourceCPU    = "cpu"
	ResourceMemory = "memory"
)

// Resources are a container's limits and requests: resource name to
// quantity (CPUQuantity, MemoryQuantity).
type Resources struct {
	Limits   map[string]string `json:"limits,omitempty"`
	Requests map[string]string `json:"requests,omitempty"`
}

// Volume is a pod volume: a ConfigMap or a PersistentVolumeClaim.
type Volume struct {
	Name                  string                 `json:"name"`
	PersistentVolumeClaim *PersistentVolumeClaim `json:"persistentVolumeClaim,omitempty"`
	ConfigMap             *LocalObjectReference  `json:"configMap,omitempty"`
}

// PersistentVolumeClaim names a claim.
type PersistentVolumeClaim struct {
	ClaimName string `json:"claimName"`
}

// VolumeMount mounts a volume into a container.
type VolumeMount struct {
	Name      string `json:"name"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
	MountPath string `json:"mountPath"`
}

// CPUQuantity is n CPUs as a quantity ("2").
func CPUQuantity(n int) string { return strconv.Itoa(n) }

// MemoryQuantity is a byte count as the API's canonical binary quantity:
// the largest of Ki, Mi, Gi, Ti, Pi, Ei that divides it exactly ("4Gi",
// "1536Ki"), else the plain number (as resource.NewQuantity(bytes,
// resource.BinarySI).String() writes it).
func MemoryQuantity(bytes int64) string {
	if bytes > -1024 && bytes < 1024 {
		return strconv.FormatInt(bytes, 10)
	}
	n, i := bytes, 0
	for i < 6 && n%1024 == 0 {
		n /= 1024
		i++
	}
	return strconv.FormatInt(n, 10) + []string{"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}[i]
}
