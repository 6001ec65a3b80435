//! Whether the command line requires class data sharing (`-Xshare:on`).
//!
//! A JVMTI environment that may see the ClassFileLoadHook in the primordial
//! phase (`can_generate_early_class_hook_events`) with the hook enabled
//! keeps the JVM from mapping its shared archive: under the default
//! `-Xshare:auto` it runs without, under `-Xshare:on` it refuses to start
//! ("CDS is disabled because early JVMTI ClassFileLoadHook is in use").
//! So what needs that hook must know, at load time, whether sharing is
//! required. JDK 11 and 17 say so in their `RequireSharedSpaces` flag;
//! later JDKs keep it out of the flag table, so the options the JVM was
//! given are read as the launcher passed them: `JAVA_TOOL_OPTIONS`, the
//! launcher's `JDK_JAVA_OPTIONS` and command line (its `@argfiles`
//! included), then `_JAVA_OPTIONS`, the last `-Xshare:` winning as in the
//! JVM. (A JVM created through the invocation API with `-Xshare:on` among
//! its options is not seen on JDK 21 and later: it refuses to start, as
//! before.)

use crate::agent::jvm::libjvm::{BoolFlag, bool_flag};

/// True when the JVM runs with `-Xshare:on`.
pub fn sharing_required() -> bool {
    if let BoolFlag::Value(required) = bool_flag(c"RequireSharedSpaces") {
        return required;
    }
    let env = |name: &str| std::env::var(name).unwrap_or_default();
    let command_line = std::fs::read("/proc/self/cmdline").unwrap_or_default();
    let command_line: Vec<String> = command_line
        .split(|&b| b == 0)
        .skip(1) // the launcher
        .map(|arg| String::from_utf8_lossy(arg).into_owned())
        .collect();
    let mut options: Vec<String> = Vec::new();
    options.extend(
        env("JAVA_TOOL_OPTIONS")
            .split_whitespace()
            .map(str::to_owned),
    );
    options.extend(
        env("JDK_JAVA_OPTIONS")
            .split_whitespace()
            .map(str::to_owned),
    );
    options.extend(launcher_options(&command_line));
    options.extend(env("_JAVA_OPTIONS").split_whitespace().map(str::to_owned));
    last_share_mode(&options) == Some("on")
}

/// The launcher's options in `args`, up to the main class, `-jar` or the
/// module to run (what follows is the program's), `@argfiles` expanded.
fn launcher_options(args: &[String]) -> Vec<String> {
    /// Options whose value is the next argument.
    const WITH_VALUE: &[&str] = &[
        "-cp",
        "-classpath",
        "--class-path",
        "-p",
        "--module-path",
        "--upgrade-module-path",
        "--add-modules",
        "--limit-modules",
        "--add-reads",
        "--add-exports",
        "--add-opens",
        "--patch-module",
        "--enable-native-access",
        "--source",
    ];
    let mut options = Vec::new();
    let mut pending: Vec<String> = args.iter().rev().cloned().collect();
    let mut expanded = 0;
    while let Some(arg) = pending.pop() {
        if let Some(file) = arg.strip_prefix('@')
            && !file.starts_with('@')
            && expanded < 64
        {
            expanded += 1;
            let text = std::fs::read_to_string(file).unwrap_or_default();
            pending.extend(text.split_whitespace().rev().map(str::to_owned));
            continue;
        }
        if !arg.starts_with('-') || ["-jar", "-m", "--module"].contains(&arg.as_str()) {
            break;
        }
        if WITH_VALUE.contains(&arg.as_str()) {
            pending.pop();
        }
        options.push(arg);
    }
    options
}

/// The mode of the last `-Xshare:<mode>` among `options`.
fn last_share_mode(options: &[String]) -> Option<&str> {
    options
        .iter()
        .rev()
        .find_map(|o| o.strip_prefix("-Xshare:"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn the_last_share_option_before_the_program_wins() {
        let options = launcher_options(&strings(&[
            "-Xshare:on",
            "-cp",
            "-Xshare:off",
            "Main",
            "-Xshare:auto",
        ]));
        assert_eq!(last_share_mode(&options), Some("on"));
        let options = launcher_options(&strings(&["-Xshare:on", "-Xshare:auto", "Main"]));
        assert_eq!(last_share_mode(&options), Some("auto"));
        let options = launcher_options(&strings(&["-jar", "app.jar", "-Xshare:on"]));
        assert_eq!(last_share_mode(&options), None);
    }
}
