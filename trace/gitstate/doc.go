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
package gitstate
