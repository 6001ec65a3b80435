//! Build script: gives the agent library a stable soname so that copies named
//! `libhprof.so` (for `-agentlib:hprof`) resolve the same way.
fn main() {
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if target_os == "linux" {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libhprof_rs.so");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
