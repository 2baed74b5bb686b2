// Package environment defines what a test environment is to the rest of traj:
// something that builds an agent's workspace, lists the test paths it knows,
// runs one test path against the built workspace and names its own version,
// so replay can cache results by (tree, environment version).
//
// The C-compiler environment lives in environment/ccompiler; the run_tests
// MCP server that exposes an Environment to the agent lives in
// environment/mcp; the registry that a task's or a trace's environment
// name picks from, and what every evaluation of a tree shares, in
// environment/evaluation.
//
// # The Result JSON (a contract)
//
// A Result is what run_tests returns inside "result", what traces record in
// envoi_calls and what replay stores per evaluated tree. Field names are
// stable; new fields may be added, none removed or renamed.
//
//	{
//	  "path": "basics/smoke",          // the test path that ran
//	  "passed": 7, "failed": 1, "total": 8,
//	  "build": {"ok": true, "phase": "build", "exit_code": 0,
//	            "stderr_tail": "…", "error": "…", "duration_ms": 120},
//	  "duration_ms": 2300,             // build + cases, wall clock
//	  "cases": [                       // sorted by name
//	    {"name": "basics/smoke/hello.c",
//	     "phase": "compare",           // build|compile|run|compare|timeout
//	     "passed": false,
//	     "expect_reject": true,        // only for programs the compiler must refuse
//	     "expected_stdout": "hello\n", // absent when stdout is not checked
//	     "actual_stdout": "hellp\n",
//	     "expected_exit_code": 0,      // absent when the exit code is not checked
//	     "actual_exit_code": 0,        // -1 when nothing ran; 128+N when killed by signal N
//	     "stderr_tail": "…",           // last 2 KiB of the compiler's or program's stderr
//	     "error": "stdout differs from the expected output",
//	     "compile_ms": 35, "run_ms": 2}
//	  ]
//	}
//
// phase is where a failing case stopped; a passing case carries the last
// phase checked ("compare", or "compile" for a correctly rejected program).
// "timeout" means the compile or the run hit its limit (error says which).
// When the build fails, every case is listed with phase "build" and
// passed false, so pass rates stay comparable across commits.
// expected_stdout and actual_stdout are reported up to 4 KiB each (marked
// "…[truncated]"); comparisons use the full captured output (64 KiB cap).
package environment
