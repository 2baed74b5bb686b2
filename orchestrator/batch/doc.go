// Package batch is the one way traj submits an array to a cluster:
// Submit takes an Array (a name, a size, the command each task runs) and
// sends it to Slurm (a script and `sbatch --array`, or one job after
// another with --dependency=afterany) or writes it as a Kubernetes
// Indexed Job manifest (Manifest builds the ConfigMap and the Job from
// typed objects; kubeapi.go holds those objects). Task i takes i from
// SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX (TaskIndex).
//
// Every submission returns one record, Submission: the executor, the job
// id (the Job's name on Kubernetes), the array's size, its folder and how
// to poll it. Callers keep a log of them (Append, Read) and add, by
// embedding it, what their tasks read: an experiment its cells
// (orchestrator/experiment), an evaluation its tree count
// (orchestrator/evalarray). Slurm's queue is read with ArrayStates
// (squeue); scheduler commands run through sandbox/xec, bounded in time
// and output. Scripts quote each word with trace.ShellWord, traj's one
// shell quoter.
package batch
