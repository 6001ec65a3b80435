//! `ctime`-style time stamps. (Being implemented.)

/// The current local time as C `ctime` prints it, without the newline,
/// e.g. `Mon Jun  9 20:33:05 2014`.
pub fn ctime_now() -> String {
    unimplemented!("ctime_now")
}
