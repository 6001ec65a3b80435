//! The release archive of `scripts/package.sh`, used as someone without
//! Rust would: unpacked into an empty folder, run with a PATH that holds a
//! JDK and the system's folders but no cargo or rustc, through `bin/hprof-rs
//! run`, `java -agentpath:lib/libhprof.so` and `-agentlib:hprof`; and the
//! newest glibc symbol version each binary needs (2.17 at most). The archive is
//! built once per run of this test binary (cargo-zigbuild: a minute or two).
//! Also how `hprof-rs agent-path` finds the library, or says it cannot.

mod common;

use common::{AsciiProfile, Jdk};
use hprof_rs::format::ascii::SiteRow;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

/// Name of the archive's one folder.
const FOLDER: &str = concat!("hprof-rs-", env!("CARGO_PKG_VERSION"));
/// The newest glibc the binaries may need.
const GLIBC_FLOOR: [u32; 2] = [2, 17];
/// What `scripts/package.sh` may take, far above its minutes, so only a hang hits it.
const PACKAGE_TIMEOUT: Duration = Duration::from_secs(40 * 60);

/// `dist/hprof-rs-<version>-linux-x86_64.tar.gz`, built by `scripts/package.sh`
/// at most once per test process.
fn archive() -> PathBuf {
    static ARCHIVE: OnceLock<PathBuf> = OnceLock::new();
    ARCHIVE
        .get_or_init(|| {
            let root = common::repo_root();
            let mut cmd = Command::new("bash");
            cmd.arg(root.join("scripts/package.sh"))
                .current_dir(&root)
                .env("CARGO_TARGET_DIR", common::target_dir());
            let out = common::run_timeout(&mut cmd, PACKAGE_TIMEOUT);
            common::assert_success(&out, "bash scripts/package.sh");
            // A clean build: no compiler error printed, even one cargo
            // shows as a warning and the build survives.
            let stderr = common::stderr_text(&out);
            assert!(
                !stderr.contains("error:") && !stderr.contains("warning:"),
                "bash scripts/package.sh printed errors or warnings:\n{stderr}"
            );
            let printed = PathBuf::from(common::stdout_text(&out).trim());
            let expected = root.join(format!("dist/{FOLDER}-linux-x86_64.tar.gz"));
            assert_eq!(printed, expected, "the archive's path, as printed");
            assert!(expected.is_file(), "{} was not written", expected.display());
            expected
        })
        .clone()
}

/// The archive unpacked into the empty folder `target/test-scratch/<test>`;
/// returns the path of its one folder `hprof-rs-<version>`.
fn unpacked(test: &str) -> PathBuf {
    let dir = common::scratch_dir(test);
    let out = common::run(
        Command::new("tar")
            .arg("-xzf")
            .arg(archive())
            .arg("-C")
            .arg(&dir),
    );
    common::assert_success(&out, "tar -xzf");
    let top: Vec<OsString> = fs::read_dir(&dir)
        .expect("the unpack folder")
        .map(|e| e.expect("a folder entry").file_name())
        .collect();
    assert_eq!(top, [OsString::from(FOLDER)], "the archive's top level");
    dir.join(FOLDER)
}

/// The reference pages of docs/, as the archive names them.
fn docs_pages() -> Vec<String> {
    let docs = common::repo_root().join("docs");
    let mut pages: Vec<String> = fs::read_dir(&docs)
        .expect("docs/")
        .map(|e| {
            e.expect("a docs/ entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("/docs/{name}"))
        .collect();
    pages.push("/docs".to_owned());
    pages
}

#[test]
fn the_archive_holds_one_folder_with_the_tool_the_agent_the_docs_and_the_licences() {
    let out = common::run(Command::new("tar").arg("-tzf").arg(archive()));
    common::assert_success(&out, "tar -tzf");
    let mut entries: Vec<String> = common::stdout_text(&out)
        .lines()
        .map(|l| l.trim_end_matches('/').to_owned())
        .collect();
    entries.sort();
    let mut expected: Vec<String> = [
        "",
        "/BENCHMARKS.md",
        "/LICENSE",
        "/LICENSE-APACHE",
        "/LICENSE-MIT",
        "/README.md",
        "/bin",
        "/bin/hprof-rs",
        "/lib",
        "/lib/libhprof.so",
        "/lib/libhprof_rs.so",
    ]
    .iter()
    .map(|rest| (*rest).to_owned())
    .chain(docs_pages())
    .map(|rest| format!("{FOLDER}{rest}"))
    .collect();
    expected.sort();
    assert_eq!(entries, expected);

    let folder = unpacked("package-layout");
    let agent = fs::read(folder.join("lib/libhprof_rs.so")).expect("lib/libhprof_rs.so");
    let alias = fs::read(folder.join("lib/libhprof.so")).expect("lib/libhprof.so");
    assert!(agent == alias, "lib/libhprof.so must be the same library");
    assert_eq!(
        fs::read(folder.join("LICENSE-MIT")).expect("LICENSE-MIT"),
        fs::read(common::repo_root().join("LICENSE-MIT")).expect("the repo's LICENSE-MIT")
    );
}

/// The targets of a Markdown text's inline links (`[text](target)`) that
/// are paths, not addresses or anchors, without their `#anchor`; code
/// blocks and code spans are left out (they show link syntax, not links).
fn relative_links(markdown: &str) -> Vec<String> {
    let mut links = Vec::new();
    let mut in_code_block = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_code_block = !in_code_block;
            continue;
        }
        if in_code_block {
            continue;
        }
        // Every other piece between backticks is a code span.
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let Some(end) = rest.find(')') else { break };
            let target = &rest[..end];
            let is_address = target.contains("://") || target.starts_with("mailto:");
            if !is_address && !target.starts_with('#') {
                let path = target.split('#').next().unwrap_or_default();
                links.push(path.to_owned());
            }
            rest = &rest[end..];
        }
    }
    links
}

#[test]
fn every_relative_link_of_the_archives_markdown_resolves_inside_it() {
    assert_eq!(
        relative_links(
            "See [a](docs/a.md#x), [b](https://x.org/b), [c](#here).\n\
             `[d](nowhere.md)` is code\n```\n[e](nor-here.md)\n```\n[f](../g.md)"
        ),
        ["docs/a.md", "../g.md"]
    );
    let folder = unpacked("package-links")
        .canonicalize()
        .expect("the archive's folder");
    let mut pages = vec![folder.join("README.md"), folder.join("BENCHMARKS.md")];
    for entry in fs::read_dir(folder.join("docs")).expect("docs/ in the archive") {
        pages.push(entry.expect("a docs/ entry").path());
    }
    let mut checked = 0;
    let mut broken = Vec::new();
    for page in &pages {
        let text = fs::read_to_string(page).expect("a Markdown page");
        let base = page.parent().expect("the page's folder");
        for link in relative_links(&text) {
            checked += 1;
            // Inside the folder, and naming a file that is there.
            let resolved = base.join(&link).canonicalize();
            match resolved {
                Ok(target) if target.starts_with(&folder) && target.is_file() => {}
                _ => broken.push(format!("{}: {link}", page.display())),
            }
        }
    }
    assert!(broken.is_empty(), "links that do not resolve: {broken:#?}");
    // README.md alone links to the docs 29 times and more.
    assert!(checked > 100, "only {checked} links found");
}

/// `GLIBC_2.2.5` → [2, 2, 5].
fn glibc_version(token: &str) -> Option<Vec<u32>> {
    let digits = token.strip_prefix("GLIBC_")?;
    digits.split('.').map(|p| p.parse().ok()).collect()
}

/// The dynamic symbol table, as `objdump -T` prints it.
fn dynamic_symbols(binary: &Path) -> String {
    let mut cmd = Command::new("objdump");
    cmd.arg("-T").arg(binary);
    let out = cmd.output().unwrap_or_else(|e| {
        panic!("cannot run objdump ({e}): scripts/setup.sh installs it (Debian's binutils)")
    });
    common::assert_success(&out, &format!("objdump -T {}", binary.display()));
    common::stdout_text(&out)
}

/// The newest `GLIBC_x.y` version among the symbols of `table`.
fn newest_glibc(table: &str) -> Option<Vec<u32>> {
    table
        .split(|c: char| c.is_whitespace() || c == '(' || c == ')')
        .filter_map(glibc_version)
        .max()
}

/// Undefined symbols that are neither weak nor tied to a glibc version: a
/// function newer than 2.17 used by a shared library (its link does not
/// fail), which an older glibc cannot resolve.
fn unversioned_imports(table: &str) -> Vec<&str> {
    table
        .lines()
        .filter(|line| line.contains("*UND*") && !line.contains("GLIBC_"))
        .filter(|line| line.split_whitespace().nth(1) != Some("w"))
        .filter_map(|line| line.split_whitespace().last())
        .collect()
}

#[test]
fn both_binaries_need_glibc_2_17_at_most() {
    assert_eq!(glibc_version("GLIBC_2.2.5"), Some(vec![2, 2, 5]));
    assert!(glibc_version("GLIBC_2.34") > glibc_version("GLIBC_2.17"));
    assert!(glibc_version("GLIBC_2.3.4") < glibc_version("GLIBC_2.17"));
    let sample = "0000000000000000      D  *UND*\t0000000000000000  Base        gettid\n\
                  0000000000000000  w   D  *UND*\t0000000000000000  Base        statx\n\
                  0000000000000000      DF *UND*\t0000000000000000 (GLIBC_2.2.5) free\n";
    assert_eq!(unversioned_imports(sample), ["gettid"]);
    assert_eq!(newest_glibc(sample), Some(vec![2, 2, 5]));

    let folder = unpacked("package-glibc");
    for binary in ["bin/hprof-rs", "lib/libhprof_rs.so", "lib/libhprof.so"] {
        let table = dynamic_symbols(&folder.join(binary));
        let newest = newest_glibc(&table)
            .unwrap_or_else(|| panic!("{binary} imports no GLIBC_ symbol:\n{table}"));
        assert!(
            newest.as_slice() <= GLIBC_FLOOR.as_slice(),
            "{binary} needs GLIBC_{newest:?}, newer than 2.17"
        );
        assert_eq!(
            unversioned_imports(&table),
            Vec::<&str>::new(),
            "{binary} imports these without a glibc version"
        );
    }
}

/// Programs whose presence would mean Rust is on the PATH.
const RUST_TOOLS: [&str; 3] = ["cargo", "rustc", "rustup"];

fn holds_rust(dir: &Path) -> bool {
    RUST_TOOLS.iter().any(|tool| dir.join(tool).exists())
}

/// A PATH built from scratch: the JDK's `bin/`, then `/usr/bin` and `/bin`
/// unless one holds cargo, rustc or rustup (a distribution's Rust).
fn path_without_rust(jdk: &Jdk) -> OsString {
    let jdk_bin = jdk.home().join("bin");
    assert!(!holds_rust(&jdk_bin), "{} holds Rust", jdk_bin.display());
    let system = [Path::new("/usr/bin"), Path::new("/bin")];
    let dirs =
        std::iter::once(jdk_bin.as_path()).chain(system.into_iter().filter(|d| !holds_rust(d)));
    std::env::join_paths(dirs).expect("a PATH")
}

/// `program` run in `workdir` with nothing of this environment but `PATH`.
fn bare_command(program: impl AsRef<std::ffi::OsStr>, workdir: &Path, path: &OsString) -> Command {
    let mut cmd = Command::new(program);
    cmd.env_clear().env("PATH", path).current_dir(workdir);
    cmd
}

/// The single SITES row of `AllocSites$Item`: 10,000 made, 4,000 kept, 24 bytes each.
fn assert_items_counted(profile: &AsciiProfile, what: &str) {
    let items: Vec<&SiteRow> = profile.sites_of_class("AllocSites$Item");
    assert_eq!(items.len(), 1, "{what}: one site of AllocSites$Item");
    let row = items[0];
    assert_eq!(
        (row.allocated_objects, row.live_objects),
        (10_000, 4_000),
        "{what}: alloc'ed and live Items"
    );
    assert_eq!((row.allocated_bytes, row.live_bytes), (240_000, 96_000));
    assert_eq!(
        profile.frames(row.trace_serial)[..2],
        ["AllocSites.makeItem", "AllocSites.main"],
        "{what}: the site's trace"
    );
}

#[test]
fn the_unpacked_archive_profiles_a_fixture_without_rust_on_every_jdk() {
    let folder = unpacked("package-run");
    let tool = folder.join("bin/hprof-rs");
    let classes = common::fixtures_classpath();
    common::on_each(&common::jdks(), |jdk| {
        let path = path_without_rust(jdk);
        let work = folder.parent().expect("the unpack folder").join(&jdk.label);
        fs::create_dir_all(&work).expect("a work folder");

        let out = common::run(bare_command(&tool, &work, &path).arg("agent-path"));
        common::assert_success(&out, "bin/hprof-rs agent-path");
        let printed = common::stdout_text(&out);
        let agent = folder
            .join("lib/libhprof_rs.so")
            .canonicalize()
            .expect("lib/");
        assert_eq!(printed, format!("{}\n", agent.display()), "agent-path");

        // `hprof-rs run` finds lib/ beside bin/ on its own.
        let mut run = bare_command(&tool, &work, &path);
        run.args([
            "run",
            "heap=sites,cutoff=0,file=run.txt",
            "--",
            "java",
            "-Xshare:auto",
        ])
        .arg("-cp")
        .arg(&classes)
        .arg("AllocSites");
        let out = common::run(&mut run);
        common::assert_success(&out, "bin/hprof-rs run ... java AllocSites");
        assert_items_counted(
            &AsciiProfile::read_whole_file(&work.join("run.txt")),
            "hprof-rs run",
        );

        // The JVM loads lib/libhprof.so by path, as a script would.
        let mut flag = OsString::from("-agentpath:");
        flag.push(folder.join("lib/libhprof.so"));
        flag.push("=heap=sites,cutoff=0,file=direct.txt");
        let mut java = bare_command("java", &work, &path);
        java.args(["-Xshare:auto", "-cp"])
            .arg(&classes)
            .arg(flag)
            .arg("AllocSites");
        let out = common::run(&mut java);
        common::assert_success(&out, "java -agentpath:lib/libhprof.so ... AllocSites");
        assert_items_counted(
            &AsciiProfile::read_whole_file(&work.join("direct.txt")),
            "-agentpath:lib/libhprof.so",
        );

        // -agentlib:hprof finds lib/libhprof.so on LD_LIBRARY_PATH, as HPROF was found.
        let mut java = bare_command("java", &work, &path);
        java.env("LD_LIBRARY_PATH", folder.join("lib"))
            .args(["-Xshare:auto", "-cp"])
            .arg(&classes)
            .arg("-agentlib:hprof=heap=sites,cutoff=0,file=agentlib.txt")
            .arg("AllocSites");
        let out = common::run(&mut java);
        common::assert_success(&out, "java -agentlib:hprof ... AllocSites");
        assert_items_counted(
            &AsciiProfile::read_whole_file(&work.join("agentlib.txt")),
            "-agentlib:hprof",
        );

        // cpu=samples (the signal handler, the C fault guard): the hot method first.
        let mut run = bare_command(&tool, &work, &path);
        run.args([
            "run",
            "cpu=samples,cutoff=0,file=cpu.txt",
            "--",
            "java",
            "-Xshare:auto",
        ])
        .arg("-cp")
        .arg(&classes)
        .arg("CpuHot");
        let out = common::run(&mut run);
        common::assert_success(&out, "bin/hprof-rs run cpu=samples ... java CpuHot");
        let profile = AsciiProfile::read_whole_file(&work.join("cpu.txt"));
        let cpu = profile.last_cpu().expect("a CPU SAMPLES block");
        assert!(
            cpu.total >= 100,
            "{} samples for about 2 s of CPU",
            cpu.total
        );
        // Summed over its traces (one per line of the loop), hotA comes first.
        let (a, b) = (
            common::cpu_count_in(cpu, "CpuHot.hotA"),
            common::cpu_count_in(cpu, "CpuHot.hotB"),
        );
        assert!(
            a > b,
            "hotA {a} must outrank hotB {b}: it does three times the work"
        );
        assert!(
            (a + b) * 100 >= cpu.total * 90,
            "hotA {a} + hotB {b} is under 90% of {}",
            cpu.total
        );

        let out = common::run(bare_command(&tool, &work, &path).args(["print", "direct.txt"]));
        common::assert_success(&out, "bin/hprof-rs print direct.txt");
    });
}

#[test]
fn agent_path_looks_beside_the_program_and_says_when_there_is_none() {
    let dir = common::scratch_dir("package-agent-path");
    let built = common::hprof_rs_bin();

    // target/release: the library in the program's own folder.
    let mut cmd = Command::new(&built);
    cmd.arg("agent-path").env_remove("HPROF_RS_AGENT");
    let out = common::run(&mut cmd);
    common::assert_success(&out, "target/release/hprof-rs agent-path");
    let beside = built
        .with_file_name("libhprof_rs.so")
        .canonicalize()
        .expect("the agent");
    assert_eq!(common::stdout_text(&out), format!("{}\n", beside.display()));

    // The program alone: exit 1 and a message that names where it looked.
    let alone = dir.join("bin/hprof-rs");
    fs::create_dir_all(alone.parent().expect("bin/")).expect("bin/");
    fs::copy(&built, &alone).expect("a copy of the tool");
    let mut cmd = Command::new(&alone);
    cmd.arg("agent-path").env_remove("HPROF_RS_AGENT");
    let out = common::run(&mut cmd);
    common::assert_exit_code(&out, 1, "agent-path without a library");
    assert_eq!(common::stdout_text(&out), "", "nothing on stdout");
    let stderr = common::stderr_text(&out);
    let lib = dir.join("bin/../lib/libhprof_rs.so");
    assert!(
        stderr.starts_with("hprof-rs: cannot find libhprof_rs.so")
            && stderr.contains(&lib.display().to_string())
            && stderr.lines().count() == 1,
        "{stderr}"
    );

    // HPROF_RS_AGENT comes first, made absolute; one naming no file is refused.
    fs::create_dir_all(dir.join("lib")).expect("lib/");
    fs::copy(common::agent_lib(), dir.join("lib/libhprof_rs.so")).expect("a copy of the agent");
    let mut cmd = Command::new(&alone);
    cmd.arg("agent-path")
        .current_dir(&dir)
        .env("HPROF_RS_AGENT", "lib/../lib/libhprof_rs.so");
    let out = common::run(&mut cmd);
    common::assert_success(&out, "agent-path with HPROF_RS_AGENT");
    let installed = dir.join("lib/libhprof_rs.so").canonicalize().expect("lib/");
    assert_eq!(
        common::stdout_text(&out),
        format!("{}\n", installed.display())
    );
    let mut cmd = Command::new(&alone);
    cmd.arg("agent-path")
        .env("HPROF_RS_AGENT", dir.join("missing.so"));
    let out = common::run(&mut cmd);
    common::assert_exit_code(&out, 1, "agent-path with HPROF_RS_AGENT naming no file");
    assert!(common::stderr_text(&out).contains("names no file"));

    // Without the variable, the copy now finds ../lib beside its bin/.
    let mut cmd = Command::new(&alone);
    cmd.arg("agent-path").env_remove("HPROF_RS_AGENT");
    let out = common::run(&mut cmd);
    common::assert_success(&out, "agent-path in the installed layout");
    assert_eq!(
        common::stdout_text(&out),
        format!("{}\n", installed.display())
    );
}
