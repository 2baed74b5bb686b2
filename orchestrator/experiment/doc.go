// Package experiment runs many trajectories from one spec: it expands a
// YAML spec into trajectory slots with deterministic ids, decides what each
// slot needs from the store (start, resume, relaunch, nothing), and runs
// each trajectory as its own `traj run` process, N at once on this machine,
// as the tasks of one Slurm job array, or as the pods of a Kubernetes
// Indexed Job (a manifest). It talks to `traj run` and the store only,
// never to the orchestrator's internals: a Slurm task and the local
// executor do exactly the same thing for their slot (Runner.Advance).
// The cluster executors describe the experiment as a batch.Array
// (SubmitSlurm: the slots that need work; KubeArray: one index per cell)
// and submit it through orchestrator/batch; slurm.json logs
// batch.Submission records with the cells of each. A task finds its cell
// with TaskCell.
//
// # The spec
//
//	name: sweep-1                  # letters, digits, . _ -; prefixes every trajectory id
//	store: ./runs                  # any traj store URL (default: TRAJ_STORE, else ./runs)
//	work_dir: ""                   # local trajectory folders and sandboxes (as traj run --work-dir)
//	matrix:                        # every combination, repeats times
//	  harnesses: [opencode]        # traj run --agent: opencode, claude-code, codex
//	  models: [scripted/demo, anthropic/claude-sonnet-4-5]
//	  tasks: [c-compiler]          # built-in task names or task folders (a Harbor dataset folder: each of its tasks)
//	  params:                      # any other traj run flag, one value per combination
//	    script: [a.jsonl, b.jsonl]
//	  repeats: 3
//	budget: {max_parts: 500, timeout: 4h, stall_timeout: 30m, max_cost: 5}  # max_cost needs traj run --max-cost
//	sandbox: bwrap                 # traj run --sandbox, when it has one
//	limits: {cpus: 2, memory: 8G}  # per trajectory: --parallel default, sbatch, pod resources
//	relaunch:
//	  max_attempts: 3              # the first attempt counts; 1 never relaunches
//	  on: [agent_error, envoi_error, timeout]
//	run: {tests-dir: /data/fixtures}   # flags given to every traj run as they are
//	keep_sandbox: false            # keep finished trajectories' sandbox folders
//	slurm: {partition: gpu, time: "06:00:00", account: lab, max_active: 8, args: [--qos=normal]}
//	kubernetes: {image: registry/traj:v2, namespace: research, parallelism: 10, store_claim: runs, secret: keys}
//	evaluate: {tasks: 8, tests: [basics, wacct]}  # Slurm: evaluate each finished trajectory on the cluster
//	fork: {from: REF, at: [10, 20], prompt: ""}   # every slot forks REF at each part (traj sweep writes this)
//
// Values that go together are paired, not crossed, by include rows: each
// row is one combination of the keys it names (harness, model, task, or
// any traj run flag), crossed only with the lists of the keys no row
// names. A harness study, each harness with its own script:
//
//	matrix:
//	  models: [scripted/demo]
//	  include:
//	    - {harness: opencode, script: sandbox/scripted/demo/c-compiler.jsonl}
//	    - {harness: claude-code, script: sandbox/scripted/demo/c-compiler-claude-code.jsonl}
//	    - {harness: codex, script: sandbox/scripted/demo/c-compiler-codex.jsonl}
//	  repeats: 3
//
// gives 3 × 3 slots, not the 27 of crossing harnesses with scripts. Every
// row names the same keys; a key the rows name is not also a list.
//
// With evaluate, the Slurm task of a slot whose trajectory is done runs
// `traj replay evaluate ID --executor slurm --detach --tasks N`: an sbatch
// array over the trees the store's evaluation cache lacks, then a job
// that writes the trajectory's evaluation.json in the store from the
// cache (evaluating there a tree a killed task left). The
// task does not wait for it, so no task holds a node while another's
// evaluation queues. Running the spec again (traj experiment run
// --executor slurm) does the same, from the submitting machine, for every
// done trajectory whose evaluation.json the store lacks (its evaluation
// failed, or its report job has not run yet).
//
// Errors name the spec file and line (spec.yaml:12: …). Keys under run and
// matrix.params, and the fields that need a traj run flag, are checked
// against `traj run --help` of the traj binary in use, so the spec follows
// traj run as it grows (harnesses, sandboxes) without a second list here.
//
// With fork, the matrix is crossed with the fork parts: each slot runs
// `traj run --fork REF --at-part P` (no --agent or --task: a fork keeps
// its source's; list the source's harness and task for the ids), its id
// ending -p<P>-r<repeat>. A resumed fork is `traj run --resume` as any.
//
// # Ids and attempts
//
// A slot's id is <name>-<task>-<model>-<hash>-r<repeat>, the hash covering
// harness, model, task and parameters (not budgets: raising max_parts
// continues the same trajectories). When the harness varies (two or more
// harnesses listed, or include rows naming it) the id names it too:
// <name>-<harness>-<task>-<model>-<hash>-r<repeat> (the hash unchanged). A
// spec of one harness, or none, keeps its ids; a spec that listed several
// harnesses before this rule gets new ids, so running it again starts new
// trajectories beside the old ones (the old stay in the store). Attempt n > 1 of a slot is the
// trajectory <id>-a<n>. Re-running a spec is idempotent: a slot whose latest
// attempt ended (solved, part_limit, or a failure with attempts exhausted)
// is done; one whose latest attempt has no session_end (its process died,
// even with kill -9 of the whole experiment) or ended interrupted is
// resumed with `traj run --resume`; one that ended with a reason listed in
// relaunch.on gets a new attempt while attempts remain. Failed attempts
// are never deleted: they stay in the store with their own ids.
//
// # Local layout
//
//	<work>/experiments/<name>/lock               one local runner per experiment
//	<work>/experiments/<name>/logs/<id>.log      each traj run's stderr, every attempt
//	<work>/experiments/<name>/slurm.json         sbatch submissions (job id → cells)
//	<work>/experiments/<name>/slurm/<time>.sh    the array script and its cells file
//	<work>/experiments/<name>/evaluations/<id>/  evaluate: a trajectory's arrays (trees, scripts, logs)
//	store: experiments/<name>/experiment.json    the spec and its slots (report by name)
//
// The local executor starts each traj run in its own process group with a
// parent-death signal: if the experiment is killed, so are its
// trajectories, and the next run resumes them; SIGINT/SIGTERM instead ask
// each traj run to finish its trajectory as interrupted. A finished
// trajectory's sandbox folder is removed when its record is complete (see
// RemoveSandbox; `traj gc` does the same for leftovers).
package experiment
