//! Build script: gives the agent library a stable soname so that copies named
//! `libhprof.so` (for `-agentlib:hprof`) resolve the same way, and compiles
//! the fault guard of the CPU sampler's stack walk (C: it needs
//! sigsetjmp/siglongjmp, which Rust cannot call safely).
fn main() {
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if target_os == "linux" {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libhprof_rs.so");
        cc::Build::new()
            .file("src/agent/modes/cpu_samples/fault_guard.c")
            .flag_if_supported("-std=c11")
            .warnings(true)
            .extra_warnings(true)
            .compile("hprof_fault_guard");
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/agent/modes/cpu_samples/fault_guard.c");
}
