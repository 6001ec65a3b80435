//! Running a child process the way a shell's `exec` would look from
//! outside: the signals that ask a program to stop (TERM, INT, HUP) or to
//! dump its state (QUIT) are passed on to the child instead of ending this
//! process alone, which would leave the child running, re-parented to PID 1.
//! A signal this process was started with ignored (`nohup`, a background
//! job of a script) is left ignored, so the child inherits it so, as it
//! would without us in between.

use rustix::process::{Pid, Signal, WaitId, WaitIdOptions, kill_process, waitid};
use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
use signal_hook::iterator::Signals;
use std::io;
use std::process::{Command, ExitStatus};

/// The signals passed on, with the child's name for each.
const FORWARDED: [(i32, Signal); 4] = [
    (SIGTERM, Signal::TERM),
    (SIGINT, Signal::INT),
    (SIGHUP, Signal::HUP),
    (SIGQUIT, Signal::QUIT),
];

/// Starts `command` and waits for it, passing TERM, INT, HUP and QUIT on to
/// it for as long as it runs; returns its exit status.
pub fn run_forwarding(command: &mut Command) -> io::Result<ExitStatus> {
    // Caught from before the child starts: a signal that comes while it is
    // being started waits in the queue and is passed on once it runs.
    let caught = FORWARDED
        .iter()
        .map(|&(number, _)| number)
        .filter(|&number| !is_ignored(number));
    let mut signals = Signals::new(caught)?;
    let handle = signals.handle();
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(error) => {
            handle.close();
            return Err(error);
        }
    };
    let pid = Pid::from_child(&child);
    let forwarder = std::thread::spawn(move || {
        for number in signals.forever() {
            if let Some(&(_, signal)) = FORWARDED.iter().find(|(n, _)| *n == number) {
                // The child may be exiting already: nothing left to tell it.
                let _ = kill_process(pid, signal);
            }
        }
    });
    // Wait for the exit without reaping: until the forwarder has stopped,
    // the pid must stay the child's (a zombie), never a new process's.
    let exited = wait_without_reaping(pid);
    handle.close();
    let _ = forwarder.join();
    exited?;
    child.wait()
}

/// Blocks until the process `pid` has exited, leaving it to be reaped.
fn wait_without_reaping(pid: Pid) -> io::Result<()> {
    loop {
        match waitid(
            WaitId::Pid(pid),
            WaitIdOptions::EXITED | WaitIdOptions::NOWAIT,
        ) {
            Ok(_) => return Ok(()),
            Err(rustix::io::Errno::INTR) => continue,
            Err(error) => return Err(error.into()),
        }
    }
}

/// Whether `signal` is ignored in this process (SIG_IGN).
fn is_ignored(signal: i32) -> bool {
    let mut current = std::mem::MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: with a null new action, sigaction only reads the current one
    // into `current`, which is valid for writes of a `sigaction`.
    let rc = unsafe { libc::sigaction(signal, std::ptr::null(), current.as_mut_ptr()) };
    // SAFETY: sigaction succeeded, so it filled `current`; a zeroed
    // `sigaction` is a valid value anyway (plain integers and pointers).
    rc == 0 && unsafe { current.assume_init() }.sa_sigaction == libc::SIG_IGN
}
