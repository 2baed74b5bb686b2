// Package view is `traj view` (Run: on a loopback address only): a local
// web viewer of a store (local folder or S3) served from the binary. The pages (assets/, embedded; plain
// JavaScript and CSS, nothing to build, nothing from another origin) are:
//
//	#/                 store: every trajectory with harness, model, task, experiment,
//	                   parts, end reason, score and its source, best, solved at, a
//	                   sparkline, cost, duration; filter, sort, group by model, harness,
//	                   task or experiment (n, mean ± sd, best, solved, medians to 50 %
//	                   and 90 %), pick several or all shown to compare
//	#/t/ID[/PART]      trajectory: score curve by part or time with regressions,
//	                   first passes and the evaluation report's failure labels
//	                   (replay/labels: ◆, label and evidence) marked; the part timeline (sub-agent parts
//	                   indented under their parent session) with search and filters;
//	                   a part as what its tool did (render.go: an edit as a diff, a
//	                   write as the file, a command then its output, run_tests as a
//	                   table of cases, a sub-agent as a link), its model calls; its
//	                   diff; the tree beside a file at that part (added lines marked,
//	                   the parts that changed it); the tests view at that part
//	#/compare?ids=A,B  compare: curves by part, time or cost with bands over repeats,
//	                   per-suite small multiples, one row per trajectory; a fork
//	                   over its source (added when not asked for and in the
//	                   store): the source whole, dashed, the fork from its fork
//	                   point on, a mark at that part
//
// Where the score has the generated fresh suite beside public ones, the
// store row and the trajectory page show the latest public − fresh gap
// (replay.FreshGap, in points, with its part), and the curve's data
// carries it per checkpoint (Curve.FreshGap; Summary.FreshGap).
//
// A fork's or rerun's store row and trajectory page say where it came from
// (lineage.go: the trace's forked_from or rerun_of, and a rerun's
// rerun.json summary line), the source a link when the store holds it.
// A trajectory's fork sweeps (`traj sweep`, replay/sweepvalue) are drawn
// under its curve by part: the value of its state at each swept part
// (filled up to the forks' mean, their spread over it, held until the next
// swept part) and a mark at the decisive part.
//
// # Every harness
//
// A part's title, text, tool input and output, sub-agent session, the
// session tree and the model calls are read from the trace's harness
// objects by that harness's reader (sandbox/harness/recorded.Reader for the trace's
// "agent"), never decoded here: OpenCode, Claude Code and Codex
// trajectories show alike (TestHarnessConformance in cmd/traj checks the
// API against each harness's neutral records).
//
// # Big traces
//
// The browser never holds a trace. The server indexes each trace once
// (Index: the byte offset and length of every part, plus the few facts the
// curves and the store page need), keeps the index in memory and in the
// cache folder, and answers a page of the timeline with one ReadAt per part.
// A trace being recorded only grows by rewriting a short tail after its last
// part, so an update resumes the scan right after the last indexed part
// (checking that part's bytes are unchanged) instead of reading the file
// again. Curves are downsampled to at most 1,500 points, keeping each
// bucket's lowest and highest score. Diffs, trees and files are computed on
// demand from a clone of the trajectory's bundles made once into the cache
// folder (go-git's on-disk storage, so objects are read when asked for).
//
// A trajectory's evaluation.json is read while its trace is indexed, and
// only for what the pages show (evalfile.go: the parts' counts and the
// test attribution; commit_evaluations, every case of every commit and
// nearly all of a long run's report, is passed over unparsed); the
// reduction is kept in the cache folder with the report's size and time.
// Measured (BenchmarkFirstPaint, BenchmarkServerRSS; 10,000 parts, a 34 MB
// evaluation of 3,058 cases): decoding the whole report had taken 0.7-0.9 s
// of a cold start and most of the server's 150-200 MB; reading it so takes
// 0.1 s beside the index's 0.2 s, and the server stays near 55 MB (80 MB
// at 50,000 parts).
//
// # Live trajectories
//
// Each request looks at the trace again at most every Options.Poll (500 ms
// for local stores, 5 s for S3, where a trajectory without its final trace
// is rebuilt from its chunks by trace/store/ref). An open trajectory page
// polls its summary every 2 s while the trajectory is running and extends
// its timeline and curve when the version changes.
//
// # Safety
//
// Everything in a trace is agent-controlled. The pages build every node
// with createElement and insert every string with textContent: no string
// from the server is ever parsed as HTML. As a second wall the server sends
// a Content-Security-Policy that allows only its own script and style (no
// inline script, no inline style attribute, no other origin) and
// nosniff/frame-deny headers. The server listens on loopback only, answers
// only requests whose Host is a loopback name (a DNS-rebinding page arrives
// under its own host name), and requires a per-start secret: the URL `traj
// view` prints carries ?token=…, which is exchanged for an HttpOnly,
// SameSite=Strict cookie. It only reads: any method but GET and HEAD is
// refused.
//
// # API
//
// The pages read JSON from /api/trajectories, /api/t/ID (summary, sessions,
// turns), /api/t/ID/curve, /api/t/ID/parts?from=N&n=M (timeline rows),
// /api/t/ID/parts/N (one part), /api/t/ID/diff/N, /api/t/ID/tree/N?path=,
// /api/t/ID/file/N?path= (with the lines part N added and the parts that
// changed the file), /api/t/ID/tests[?part=N], /api/t/ID/search?q=&kind=
// &tool=&session=&error=1&committed=1&run_tests=1 (a query, filters, or
// both), /api/t/ID/calls[/SEQ] (a call's reply put back together),
// /api/t/ID/sweeps (its fork sweeps' rows and decisive parts) and
// /api/compare?ids=A,B (with each run's cost by part, and a fork's source).
//
// # Bounded work
//
// Every line diff (a checkpoint's patch, the lines a part added to a
// file, an edit action) is replay/linediff's, its work bounded: a file an
// agent made too large to diff (a 160,000-line file rewritten as a
// permutation cost go-git's diff 124 s of CPU) is answered with
// too_large set and labelled "too large to diff", within about 0.4 s of
// CPU, as git answers it in about 0.6 s. The diff and file answers run
// under the request's context, so a client that goes away ends the work.
package view
