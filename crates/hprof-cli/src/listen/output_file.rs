//! The files the tool writes (`listen`'s, `-o` of flame, report, convert,
//! `diff --flame`, what `attach` brings out of a container): they hold the
//! program's data (heap contents, names, arguments), so they are made
//! through crates/hprof-private-files like the agent's own: 0600, never
//! through a file of another user, nor through a symbolic link of theirs
//! in any component of the path (`-o /tmp/ci/out` with `/tmp/ci` planted).

use std::fs::File;
use std::io::{self, BufWriter, ErrorKind};
use std::path::Path;

/// Opens `path` empty, with mode 0600: created if missing; if there,
/// emptied only when it is ours or root's. A refusal says which component
/// was another user's.
pub fn create(path: &Path) -> io::Result<File> {
    hprof_private_files::create(path).map_err(|e| match e {
        hprof_private_files::Error::Io(e) => e,
        refused => io::Error::new(ErrorKind::PermissionDenied, refused.to_string()),
    })
}

/// [`create`], buffered, with the error as the tool's line (`PATH: why`).
pub fn create_buffered(path: &Path) -> Result<BufWriter<File>, String> {
    create(path)
        .map(BufWriter::new)
        .map_err(|e| format!("{}: {e}", path.display()))
}
