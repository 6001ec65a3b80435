//! The larger stacks the rewriting modes give the threads a program starts
//! (`jvm/thread_stacks.rs`) never show: a thread reads the stack size it
//! was made with, and a process whose address space is limited starts as
//! many threads as without the agent.

mod common;

use common::{Jdk, jdks_of, on_each, printed, stderr_text, stdout_text};
use std::os::unix::process::CommandExt;
use std::process::Output;

/// The modes whose rewritten code gets threads larger stacks.
const REWRITING_MODES: [&str; 2] = ["heap=sites", "cpu=times"];

/// `java <jvm_args> ThreadStacks <args>`, with the agent's `options` unless
/// empty, its file in a scratch directory.
fn thread_stacks(jdk: &Jdk, test: &str, options: &str, jvm_args: &[&str], args: &[&str]) -> Output {
    let dir = common::scratch_dir(
        &format!(
            "thread-stacks-{test}-{}-{}",
            jdk.label,
            if options.is_empty() { "none" } else { options }
        )
        .replace(['=', ','], "-"),
    );
    let mut cmd = common::java_command(jdk, &dir);
    cmd.args(jvm_args);
    if !options.is_empty() {
        cmd.arg(common::agentpath_arg(options));
    }
    cmd.arg("ThreadStacks").args(args);
    let out = common::run(&mut cmd);
    common::assert_success(&out, &format!("{test} {options} on {}", jdk.label));
    out
}

/// 2,000 threads made with a stack size of 200,000 bytes each read their
/// own Thread's field first thing in run(): every one reads 200,000 (before
/// the new thread waited for its starter's write-back, 2-5% read the
/// enlarged size under either mode).
#[test]
fn every_new_thread_reads_the_stack_size_it_was_made_with() {
    on_each(&jdks_of(&[11, 17, 21, 25]), |jdk| {
        let opens: &[&str] = if jdk.major >= 17 {
            &["--add-opens", "java.base/java.lang=ALL-UNNAMED"]
        } else {
            &[]
        };
        for options in REWRITING_MODES {
            let out = thread_stacks(jdk, "sizes", options, opens, &["sizes", "2000"]);
            let stdout = stdout_text(&out);
            assert_eq!(printed::<u32>(&stdout, "read"), 2000, "{options}: {stdout}");
            assert_eq!(
                printed::<u32>(&stdout, "other"),
                0,
                "{options}: threads that read another size than they were made with"
            );
        }
    });
}

/// Small reservations, so that the JVM itself fits a 1.2 GB address space
/// (1,200,000 KiB) with room for 400 stacks of the default 1 MiB and not
/// for 400 of three times that.
const SMALL_JVM: [&str; 3] = [
    "-Xmx64m",
    "-XX:CompressedClassSpaceSize=128m",
    "-XX:ReservedCodeCacheSize=64m",
];

/// Under `ulimit -v`, 400 threads alive at once start with the agent as
/// they do without it (before, 3 MiB stacks ran the process out of address
/// space after 150-230 threads, an OutOfMemoryError and HotSpot's
/// "pthread_create failed" warnings).
#[test]
fn threads_start_under_an_address_space_limit_as_without_the_agent() {
    on_each(&jdks_of(&[11, 17, 21, 25]), |jdk| {
        let crowd = |options: &str| {
            let dir = common::scratch_dir(&format!(
                "thread-stacks-crowd-{}-{}",
                jdk.label,
                if options.is_empty() { "none" } else { options }
            ));
            let mut cmd = common::java_command(jdk, &dir);
            cmd.args(SMALL_JVM).env("MALLOC_ARENA_MAX", "2");
            if !options.is_empty() {
                cmd.arg(common::agentpath_arg(options));
            }
            cmd.args(["ThreadStacks", "crowd", "400"]);
            // SAFETY: setrlimit is async-signal-safe, and the closure
            // touches nothing else between fork and exec.
            unsafe {
                cmd.pre_exec(|| {
                    let limit = libc::rlimit {
                        rlim_cur: 1_200_000 * 1024,
                        rlim_max: 1_200_000 * 1024,
                    };
                    if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
            let out = common::run(&mut cmd);
            common::assert_success(&out, &format!("crowd {options:?} on {}", jdk.label));
            out
        };
        let alone = stdout_text(&crowd(""));
        assert_eq!(
            printed::<u32>(&alone, "started"),
            400,
            "without the agent (the limit leaves room for 400 threads)"
        );
        for options in REWRITING_MODES {
            let out = crowd(options);
            let stdout = stdout_text(&out);
            assert_eq!(printed::<u32>(&stdout, "started"), 400, "{options}");
            assert_eq!(printed::<u32>(&stdout, "failed"), 0, "{options}");
            let stderr = stderr_text(&out);
            assert!(
                !stderr.contains("Failed to start"),
                "{options}: HotSpot could not start a thread:\n{stderr}"
            );
        }
    });
}
