//! Build script: gives the agent library a stable soname so that copies named
//! `libhprof.so` (for `-agentlib:hprof`) resolve the same way, and compiles
//! the fault guard of the CPU sampler's stack walk (C: it needs
//! sigsetjmp/siglongjmp, which Rust cannot call safely) and the JNI
//! functions that hand main() to a larger stack (C: they take varargs).
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
        cc::Build::new()
            .file("src/agent/jvm/main_call.c")
            .flag_if_supported("-std=c11")
            .warnings(true)
            .extra_warnings(true)
            .compile("hprof_main_call");
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/agent/modes/cpu_samples/fault_guard.c");
    println!("cargo:rerun-if-changed=src/agent/jvm/main_call.c");
}
