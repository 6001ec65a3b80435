//! A real compile to check that a profiling mode does not change what a
//! program computes: Debian's javac 17 compiling the `jdk.compiler`
//! module's own sources (about 406 files, from the JDK's src.zip), with and
//! without the agent, and the class files compared byte for byte.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const SOURCES_ZIP: &str = "/usr/lib/jvm/java-17-openjdk-amd64/lib/src.zip";
const JDK_BIN: &str = "/usr/lib/jvm/java-17-openjdk-amd64/bin";

/// The `jdk.compiler` sources unpacked in a scratch directory.
pub struct JdkCompilerSources {
    dir: PathBuf,
    list: PathBuf,
}

/// Every file under `dir`, recursively.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        for entry in fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files
}

/// Unpacks the sources into scratch directory `name`; None (a skip, or a
/// failure under `HPROF_RS_REQUIRE_JDKS`) when src.zip is missing.
pub fn jdk_compiler_sources(name: &str) -> Option<JdkCompilerSources> {
    let zip = Path::new(SOURCES_ZIP);
    if !zip.is_file() {
        assert!(
            !super::strict(),
            "{SOURCES_ZIP} is missing: run scripts/setup.sh"
        );
        eprintln!("skipping: {SOURCES_ZIP} is missing (run scripts/setup.sh)");
        return None;
    }
    let dir = super::scratch_dir(name);
    let mut unzip = Command::new(Path::new(JDK_BIN).join("jar"));
    unzip
        .current_dir(&dir)
        .arg("xf")
        .arg(zip)
        .arg("jdk.compiler");
    super::assert_success(&super::run(&mut unzip), "jar xf src.zip jdk.compiler");
    let sources: Vec<PathBuf> = files_under(&dir.join("jdk.compiler"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "java"))
        .collect();
    assert!(
        sources.len() > 400,
        "jdk.compiler has about 406 sources, found {}",
        sources.len()
    );
    let list = dir.join("sources.txt");
    let lines: Vec<String> = sources.iter().map(|p| p.display().to_string()).collect();
    fs::write(&list, lines.join("\n")).unwrap();
    Some(JdkCompilerSources { dir, list })
}

impl JdkCompilerSources {
    /// Compiles the sources into `<dir>/<out>`, with the agent's `agent`
    /// options if any; returns that directory.
    pub fn compile(&self, out: &str, agent: Option<&str>) -> PathBuf {
        let out_dir = self.dir.join(out);
        fs::create_dir_all(&out_dir).unwrap();
        let mut cmd = Command::new(Path::new(JDK_BIN).join("javac"));
        cmd.current_dir(&self.dir)
            .arg("-nowarn")
            .arg("-d")
            .arg(&out_dir);
        cmd.arg("--patch-module").arg(format!(
            "jdk.compiler={}",
            self.dir.join("jdk.compiler").display()
        ));
        if let Some(options) = agent {
            cmd.arg(format!(
                "-J{}",
                super::agentpath_arg(options).to_string_lossy()
            ));
        }
        cmd.arg(format!("@{}", self.list.display()));
        super::assert_success(
            &super::run_timeout(&mut cmd, std::time::Duration::from_secs(900)),
            &format!("javac into {out}"),
        );
        out_dir
    }
}

/// Asserts every file under `expected` is under `actual` with the same
/// bytes; returns how many were compared.
pub fn assert_same_files(expected: &Path, actual: &Path) -> usize {
    let files = files_under(expected);
    for path in &files {
        let twin = actual.join(path.strip_prefix(expected).unwrap());
        assert!(
            fs::read(path).unwrap() == fs::read(&twin).unwrap_or_default(),
            "{} differs",
            path.display()
        );
    }
    files.len()
}
