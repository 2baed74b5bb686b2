// Package gitstate keeps the agent's workspace in git: checkpoints after
// each part, and git bundles to move that history between machines.
//
// The checkpoint history is traj's, not the agent's: Init makes a git
// directory outside the workspace (the orchestrator puts it at
// sandboxes/<id>/checkpoints.git, beside workspace/, outside every sandbox
// mount) whose work tree is the workspace. The agent may create, reset,
// delete or corrupt its own .git in the workspace: checkpoints never read
// it (its HEAD is only noted, as repo_checkpoint.agent_git_head).
//
// What a checkpoint records is decided by traj and the task
// (trace.CaptureRules in Options), never by the workspace: .gitignore
// files and .git/info/exclude are not read. Excluded paths (gitignore
// syntax) are pruned during the walk; a regular file above MaxFileBytes is
// recorded as a small stub blob naming its size and SHA-256 and listed in
// repo_checkpoint.stubbed_files. The excludes are also written to the git
// directory's info/exclude, so `git --git-dir=… status` agrees.
//
// Checkpoints own their change detection instead of go-git's
// Worktree.Status, which in v5 walks and hashes ignored folders (a Rust
// target/ of 30,000 files costs ~250 ms per call). The walk prunes excluded
// folders as it goes, trusts the index stat data (size, mtime, ctime,
// inode, mode) and hashes only files whose stat changed. Like git, an entry
// whose mtime is not older than the index file is "racily clean" and is
// hashed again. Files above 1 MB are streamed into loose objects, never
// read whole. Blobs, trees and the commit are written through go-git's
// object storage first; the branch ref is then replaced atomically (temp
// file and rename), and the index (version 2, readable by the git CLI)
// last. A crash between those leaves a stale index, which the next
// checkpoint repairs by rehashing.
//
// Everything a checkpoint reads under the workspace (the agent's .git
// HEAD too) is opened with openat2 beneath the workspace root, following
// no symlink (beneath.go; without openat2, a component at a time with
// O_NOFOLLOW): an agent, or a daemon it left, that swaps a file or folder
// for a symlink to the host between the walk and the read gets that path
// skipped for this checkpoint and the symlink itself recorded by the
// next, never the host's bytes (TestReadsStayInWorkspace; plain opens
// stored a host file and a host symlink's target).
//
// What a checkpoint records:
//   - regular files (mode 100644, or 100755 when the owner exec bit is set)
//     and symbolic links (mode 120000, the link target as content);
//   - not: empty directories, sockets, fifos and devices, excluded paths;
//   - a nested .git directory or file (an agent running `cargo new` or
//     `git init` in a subfolder) is skipped and the nested repository's
//     files are recorded as ordinary files, never as a gitlink, so the
//     workspace history stays self-contained;
//   - a rename is reported in changed_files as the old and the new path
//     (a delete plus an add).
//
// Reading bundles keeps memory flat (Repo.ReadBundle): the pack is
// streamed to a file in objects/pack while its SHA-1 trailer is checked;
// a full bundle's pack is then indexed and kept as it is (as `git clone`
// does), an incremental (thin) one is resolved against the repository into
// loose objects. The indexing is our own index-pack (indexpack.go): one
// scan hashing whole objects as they stream, deltas resolved depth first
// holding a base only while a child still needs it, and a .idx byte for
// byte the one `git index-pack` writes, in under 100 bytes an object (go-git's
// parser took ~560 and the delta results: 140 MB of heap at 250,000
// objects). A delta is built in memory, so one whose result, base or
// instructions exceed 64 MiB is refused with an error naming its offset,
// its base and the sizes it declares (ErrCorruptBundle): a 300-byte
// bundle could otherwise build 4 GiB. traj writes objects above 1 MB whole,
// never as deltas, so its own bundles never come near the limit. Objects
// above 1 MB are read lazily from packs and loose files, and checkouts
// stream blobs into files. FromBundles makes a bare
// repository from bundles; Repo.Clone checks a commit out of it by
// hard-linking its objects (replay's checkout-part); Repo.Export writes a
// commit's files without a .git (evaluate).
//
// Bundles follow git's bundle format v2 (gitformat-bundle(5)):
//
//	# v2 git bundle
//	-<sha> <comment>        prerequisite commits (incremental bundles only)
//	<sha> <refname>         every ref, HEAD included
//	                        a blank line
//	<packfile>
//
// Full bundles hold a pack in which each tree or blob is an OFS_DELTA
// against the previous version at the same path when that pays
// (writeFullPack), as git groups deltas by path.
// Incremental bundles are thin packs, like `git bundle create` writes: an
// edited file or folder is a REF_DELTA against the object at the same path
// in the prerequisite commit, so a one-file edit costs about a kilobyte
// instead of the whole file and its parent trees.
// Version 3 bundles with @object-format=sha1 are read too; thin packs
// (REF_DELTA against prerequisite objects, as `git bundle create` writes
// them) resolve against objects already stored.
//
// Durable history: after each committed checkpoint the orchestrator writes
// an incremental bundle whose prerequisite is the last commit it bundled
// (store.HistoryBundleKey names it), and at the end one full bundle. If the full
// bundle is missing, CloneFromBundles rebuilds the repository from the
// incremental ones in order.
//
// # Measured
//
// A checkpoint after a one-file change at 300/3,000/30,000 files
// (BenchmarkCheckpoint, quiet machine, 2026-11-26): 10/16-17/97-99 ms vs
// `git add -A && git commit` 15-20/27-28/128-148 ms; it hashes 1 file
// (hashed/op: the stat cache works). Before, 10-12/26-30/190-200 ms: the
// walk (readdir, lstat every file: the floor git pays too) was two thirds
// of it and re-encoding every folder's tree a sixth. Now walk.go reads
// folders in parallel (2x GOMAXPROCS, at most 16) and lstats each file
// relative to its open folder (fstatat), 116 -> 63-73 ms at 30,000; a scan
// re-encodes only the folders on the way to a change (cachedTree: each
// folder's tree with the index entries it came from; a folder reused whole
// carries the folders beneath it, TestTreeCacheKeepsEveryFolder;
// TestTreeCacheMatchesGit checks every tree against git's write-tree).
// With one open workspace root per scan (beneath.go): 11-14 ms at 3,000
// files vs git's 22-25, 81-87 ms at 30,000 vs 128-135. The bench's git
// repository has gc.auto=0 (the first commit of 30,000 files otherwise
// starts a background gc that runs into the next measurement). A
// repo.bundle of 501 checkpoints: 1.01x the bytes of `git bundle create
// --all` in 0.61x its time.
//
// Reading history (make bench, 2 cores under a load of ~10-15, side by
// side with the git CLI on the same bundle, median of 3): checkout-part
// at 1k/10k/50k parts takes 0.59x/1.0x/0.64x the time of `git clone
// --no-checkout` + `git checkout`, peak RSS 17/24/70 MB (git 15/27/116;
// with go-git's pack parser 1.3x/1.9x/2.0x and 19/60/262 MB); a tree with
// a 200 MB file 17 MB RSS (git 404 MB).
package gitstate
