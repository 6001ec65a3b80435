//! Processes in namespaces of their own, for the attach tests: a JVM run
//! under `unshare --fork --pid --mount` (a container, as the host sees it).

use std::fs;
use std::process::Command;
use std::time::Duration;

/// The host pid of the JVM `unshare --fork` started (its only child).
pub fn forked_child(unshare: i32) -> i32 {
    for _ in 0..200 {
        let children = fs::read_to_string(format!("/proc/{unshare}/task/{unshare}/children"))
            .unwrap_or_default();
        if let Some(child) = children.split_whitespace().next() {
            return child.parse().expect("a pid");
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("unshare {unshare} started no child");
}

/// Whether this test can make namespaces (util-linux's unshare, as root).
pub fn can_unshare() -> bool {
    Command::new("unshare")
        .args(["--fork", "--pid", "--mount", "--mount-proc", "true"])
        .status()
        .is_ok_and(|s| s.success())
}

/// Shell commands, run in a new mount namespace, that give it a /tmp of its
/// own while keeping this checkout where it is: a clone under /tmp (as CI may
/// make it), with the JDKs and fixtures inside, is bound into the new /tmp
/// from the old one, reached through /mnt before /tmp is covered.
pub fn own_tmp_keeping_the_checkout() -> String {
    let root = fs::canonicalize(env!("CARGO_MANIFEST_DIR")).expect("the checkout's path");
    let top = root
        .strip_prefix("/tmp")
        .ok()
        .and_then(|rest| rest.components().next())
        .map(|first| first.as_os_str().to_string_lossy().into_owned());
    match top {
        None => "mount -t tmpfs tmpfs /tmp".into(),
        Some(top) => format!(
            "mkdir -p /mnt && mount --bind /tmp /mnt && mount -t tmpfs tmpfs /tmp \
             && mkdir '/tmp/{top}' && mount --bind '/mnt/{top}' '/tmp/{top}' && umount /mnt"
        ),
    }
}
