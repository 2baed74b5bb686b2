// Package gitstate keeps the agent's workspace in git: checkpoints after
// each part, and git bundles to move that history between machines.
//
// Checkpoints own their change detection instead of go-git's
// Worktree.Status, which in v5 walks and hashes git-ignored folders (a Rust
// target/ of 30,000 files costs ~250 ms per call). The walk prunes ignored
// folders as it goes (root and nested .gitignore files and
// .git/info/exclude, through go-git's gitignore patterns), trusts the index
// stat data (size, mtime, ctime, inode, mode) and hashes only files whose
// stat changed. Like git, an entry whose mtime is not older than the index
// file is "racily clean" and is hashed again. Blobs, trees and the commit
// are written through go-git's object storage first; the branch ref is then
// replaced atomically (temp file and rename), and the index (version 2,
// readable by the git CLI) last. A crash between those leaves a stale index,
// which the next checkpoint repairs by rehashing.
//
// What a checkpoint records:
//   - regular files (mode 100644, or 100755 when the owner exec bit is set)
//     and symbolic links (mode 120000, the link target as content);
//   - not: empty directories, sockets, fifos and devices, anything ignored;
//   - a nested .git directory or file (an agent running `cargo new` or
//     `git init` in a subfolder) is skipped and the nested repository's
//     files are recorded as ordinary files, never as a gitlink, so the
//     workspace history stays self-contained;
//   - a rename is reported in changed_files as the old and the new path
//     (a delete plus an add).
//
// Bundles follow git's bundle format v2 (gitformat-bundle(5)):
//
//	# v2 git bundle
//	-<sha> <comment>        prerequisite commits (incremental bundles only)
//	<sha> <refname>         every ref, HEAD included
//	                        a blank line
//	<packfile>
//
// Full bundles use go-git's pack encoder (deltas within the pack).
// Incremental bundles are thin packs, like `git bundle create` writes: an
// edited file or folder is a REF_DELTA against the object at the same path
// in the prerequisite commit, so a one-file edit costs about a kilobyte
// instead of the whole file and its parent trees.
// Version 3 bundles with @object-format=sha1 are read too. Readers index
// the pack with go-git's packfile parser backed by the target storage, so
// thin packs (REF_DELTA against prerequisite objects, as `git bundle
// create` writes them) resolve against objects already stored.
//
// Durable history: after each committed checkpoint the orchestrator writes
// an incremental bundle whose prerequisite is the last commit it bundled
// (store.HistoryBundleKey names it), and at the end one full bundle. If the full
// bundle is missing, CloneFromBundles rebuilds the repository from the
// incremental ones in order.
package gitstate
