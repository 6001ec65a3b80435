//! One test per rule. The tests that play another user hand files and
//! links to `nobody` (65534) with lchown, so they need root (as CI runs
//! them); as another user they say so and pass.

use super::*;
use std::fs;
use std::os::unix::fs::{OpenOptionsExt, symlink};
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

const NOBODY: u32 = 65534;

/// Held by every test: one of them changes the umask, which is the whole
/// process's.
static UMASK: Mutex<()> = Mutex::new(());

/// A fresh directory of its own under the system's temporary one, removed
/// when dropped, with the umask lock held.
struct Scratch {
    dir: PathBuf,
    _lock: MutexGuard<'static, ()>,
}

impl Scratch {
    fn new(name: &str) -> Scratch {
        let lock = UMASK.lock().unwrap_or_else(|e| e.into_inner());
        let dir =
            std::env::temp_dir().join(format!("hprof-private-files-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        Scratch { dir, _lock: lock }
    }

    fn join(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

fn mode(path: &Path) -> u32 {
    fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
}

fn make_fifo(path: &Path, mode: u32) {
    let c = c_name(path.as_os_str()).unwrap();
    // SAFETY: a NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), mode) }, 0);
}

fn give_to_nobody(path: &Path) {
    std::os::unix::fs::lchown(path, Some(NOBODY), Some(NOBODY)).unwrap();
}

/// Whether this test can play another user.
fn root(test: &str) -> bool {
    let root = sys::effective_uid() == 0;
    if !root {
        eprintln!("{test}: needs root to give files to another user; not run");
    }
    root
}

fn refused_link(result: Result<Opened, Error>) -> PathBuf {
    match result {
        Err(Error::ForeignLink(component)) => component,
        Err(e) => panic!("refused for another reason: {e}"),
        Ok(_) => panic!("opened"),
    }
}

fn errno(result: Result<Opened, Error>) -> i32 {
    match result {
        Err(Error::Io(e)) => e.raw_os_error().unwrap(),
        Err(e) => panic!("refused: {e}"),
        Ok(_) => panic!("opened"),
    }
}

#[test]
fn a_new_file_is_0600_whatever_the_umask() {
    let scratch = Scratch::new("umask");
    for umask in [0o022, 0o000, 0o277] {
        // SAFETY: umask cannot fail; the lock keeps the other tests of
        // this crate from creating files meanwhile.
        let old = unsafe { libc::umask(umask) };
        let path = scratch.join(&format!("out-{umask:o}"));
        let opened = open(&path, false);
        // SAFETY: as above.
        unsafe { libc::umask(old) };
        assert!(opened.unwrap().created);
        assert_eq!(mode(&path), 0o600, "umask {umask:o}");
    }
}

#[test]
fn an_old_file_of_ours_is_kept_by_open_and_emptied_and_made_private_by_create() {
    let scratch = Scratch::new("old");
    let path = scratch.join("out");
    fs::write(&path, b"old data").unwrap();
    fs::set_permissions(&path, Permissions::from_mode(0o644)).unwrap();
    let opened = open(&path, false).unwrap();
    assert!(!opened.created);
    assert_eq!(fs::read(&path).unwrap(), b"old data");
    assert_eq!(mode(&path), 0o644);
    drop(opened);
    create(&path).unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"");
    assert_eq!(mode(&path), 0o600);
}

#[test]
fn another_users_file_or_fifo_is_refused_and_left_alone() {
    if !root("another user's file") {
        return;
    }
    let scratch = Scratch::new("theirs");
    let theirs = scratch.join("theirs");
    fs::write(&theirs, b"theirs").unwrap();
    fs::set_permissions(&theirs, Permissions::from_mode(0o666)).unwrap();
    give_to_nobody(&theirs);
    assert!(matches!(create(&theirs), Err(Error::ForeignFile)));
    assert_eq!(fs::read(&theirs).unwrap(), b"theirs");
    assert_eq!(mode(&theirs), 0o666);

    let fifo = scratch.join("fifo");
    make_fifo(&fifo, 0o666);
    give_to_nobody(&fifo);
    // A reader, so that the non-blocking open of the FIFO itself succeeds.
    let _reader = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .unwrap();
    assert!(matches!(open(&fifo, true), Err(Error::ForeignFile)));
}

#[test]
fn another_users_link_as_the_last_component_is_refused() {
    if !root("another user's link") {
        return;
    }
    let scratch = Scratch::new("lastlink");
    let victim = scratch.join("victim");
    fs::write(&victim, b"victim").unwrap();
    let link = scratch.join("out");
    symlink(&victim, &link).unwrap();
    give_to_nobody(&link);
    assert_eq!(refused_link(open(&link, false)), link);
    assert_eq!(fs::read(&victim).unwrap(), b"victim");
}

#[test]
fn another_users_link_as_a_directory_on_the_way_is_refused_by_name() {
    if !root("another user's directory link") {
        return;
    }
    let scratch = Scratch::new("dirlink");
    let private = scratch.join("private");
    fs::create_dir(&private).unwrap();
    fs::set_permissions(&private, Permissions::from_mode(0o700)).unwrap();
    fs::write(private.join("out"), b"victim").unwrap();
    let ci = scratch.join("ci");
    symlink(&private, &ci).unwrap();
    give_to_nobody(&ci);
    let path = ci.join("out");
    let error = create(&path).err().unwrap();
    assert_eq!(
        error.to_string(),
        format!(
            "refused: {} is a symbolic link owned by another user",
            ci.display()
        )
    );
    assert_eq!(fs::read(private.join("out")).unwrap(), b"victim");

    // Reached through a link of ours, the component is named as walked.
    let ours = scratch.join("ours");
    symlink(&scratch.dir, &ours).unwrap();
    let through = ours.join("ci/out");
    assert_eq!(refused_link(open(&through, false)), ci);
}

#[test]
fn our_links_are_followed_on_the_way_and_at_the_end() {
    let scratch = Scratch::new("ourlinks");
    fs::create_dir(scratch.join("real")).unwrap();
    symlink("real", scratch.join("dir")).unwrap();
    // Relative to the link's own directory, not to ours.
    symlink("../real/file", scratch.join("real/last")).unwrap();
    let opened = open(&scratch.join("dir/last"), false).unwrap();
    assert!(opened.created);
    assert_eq!(mode(&scratch.join("real/file")), 0o600);
}

#[test]
fn a_relative_path_starts_from_the_current_directory() {
    let scratch = Scratch::new("relative");
    // `..` past `/` stays at `/`: from any current directory this reaches
    // the scratch directory.
    let up = "../".repeat(64);
    let relative = PathBuf::from(format!("{up}{}", scratch.dir.display()).replace("//", "/"));
    assert!(relative.is_relative());
    create(&relative.join("out")).unwrap();
    assert_eq!(mode(&scratch.join("out")), 0o600);
}

#[test]
fn a_loop_or_more_than_40_links_is_eloop() {
    let scratch = Scratch::new("loop");
    symlink("b", scratch.join("a")).unwrap();
    symlink("a", scratch.join("b")).unwrap();
    assert_eq!(errno(open(&scratch.join("a"), false)), libc::ELOOP);
    assert_eq!(errno(open(&scratch.join("a/x"), false)), libc::ELOOP);

    // 40 links are followed, 41 are not.
    let chain = |n: usize, name: &str| {
        for i in 0..n {
            let next = if i + 1 == n {
                format!("{name}-file")
            } else {
                format!("{name}-{}", i + 1)
            };
            symlink(next, scratch.join(&format!("{name}-{i}"))).unwrap();
        }
        scratch.join(&format!("{name}-0"))
    };
    open(&chain(40, "forty"), false).unwrap();
    assert!(scratch.join("forty-file").exists());
    assert_eq!(errno(open(&chain(41, "many"), false)), libc::ELOOP);
    assert!(!scratch.join("many-file").exists());
}

#[test]
fn a_directory_is_eisdir_and_a_missing_one_enoent() {
    let scratch = Scratch::new("dirs");
    assert_eq!(errno(open(&scratch.dir, false)), libc::EISDIR);
    assert_eq!(errno(open(Path::new("/"), false)), libc::EISDIR);
    assert_eq!(errno(open(&scratch.join("new/"), false)), libc::EISDIR);
    assert_eq!(errno(open(&scratch.join("no/out"), false)), libc::ENOENT);
    assert_eq!(errno(open(Path::new(""), false)), libc::ENOENT);
    fs::write(scratch.join("file"), b"").unwrap();
    assert_eq!(errno(open(&scratch.join("file/out"), false)), libc::ENOTDIR);
}

#[test]
fn devices_and_proc_links_are_opened_as_they_are() {
    let _scratch = Scratch::new("devices");
    let null = open(Path::new("/dev/null"), false).unwrap();
    assert!(!null.created);
    assert_eq!(mode(Path::new("/dev/null")), 0o666);
    // /dev/stdout -> /proc/self/fd/1 (procfs: whatever fd 1 is).
    open(Path::new("/dev/stdout"), false).unwrap();
}

#[test]
fn a_fifo_no_one_reads_fails_at_once_when_non_blocking() {
    let scratch = Scratch::new("fifo");
    let fifo = scratch.join("fifo");
    make_fifo(&fifo, 0o600);
    assert_eq!(errno(open(&fifo, true)), libc::ENXIO);
}

#[test]
fn remove_created_removes_only_the_file_made_and_never_through_anothers_link() {
    let scratch = Scratch::new("remove");
    fs::create_dir(scratch.join("real")).unwrap();
    symlink("real", scratch.join("dir")).unwrap();
    let path = scratch.join("dir/out");
    let opened = open(&path, false).unwrap();
    remove_created(&path, &opened.file).unwrap();
    assert!(!scratch.join("real/out").exists());

    // Something else at the name since: left alone.
    let opened = open(&path, false).unwrap();
    fs::remove_file(&path).unwrap();
    fs::write(&path, b"another file").unwrap();
    remove_created(&path, &opened.file).unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"another file");

    if !root("remove through another user's link") {
        return;
    }
    let opened = open(&scratch.join("real/made"), false).unwrap();
    let theirs = scratch.join("theirs");
    symlink("real", &theirs).unwrap();
    give_to_nobody(&theirs);
    let through = theirs.join("made");
    assert!(matches!(
        remove_created(&through, &opened.file),
        Err(Error::ForeignLink(link)) if link == theirs
    ));
    assert!(scratch.join("real/made").exists());
}
