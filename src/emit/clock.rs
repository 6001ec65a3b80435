//! The time stamps of ASCII sections: the C library's local time (its time
//! zone rules, `localtime_r`), laid out as C `ctime` prints it.

use crate::format::ascii::time::{CalendarTime, UNKNOWN_TIME, ctime_text};
use std::time::{SystemTime, UNIX_EPOCH};

/// The current local time as C `ctime` prints it, without the newline,
/// e.g. `Mon Jun  9 20:33:05 2014`.
pub fn ctime_now() -> String {
    let secs = match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(after) => after.as_secs() as i64,
        Err(before) => -(before.duration().as_secs() as i64),
    };
    ctime(secs)
}

/// Local time of `secs_since_epoch` in glibc `ctime` layout without the
/// newline; a time the C library cannot convert gives
/// `??? ??? ?? ??:??:?? ????` (where C `ctime` would return NULL).
pub fn ctime(secs_since_epoch: i64) -> String {
    match local_time(secs_since_epoch) {
        Some(time) => ctime_text(&time),
        None => UNKNOWN_TIME.to_string(),
    }
}

fn local_time(secs: i64) -> Option<CalendarTime> {
    let t = crate::sys::local_time(secs)?;
    Some(CalendarTime {
        year: t.year,
        month: t.month,
        day: t.day,
        hour: t.hour,
        minute: t.minute,
        second: t.second,
        weekday: t.weekday,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_ctime_without_newline() {
        let text = ctime(1_402_345_985);
        assert_eq!(text.len(), 24, "{text:?}");
        let bytes = text.as_bytes();
        for (i, expected) in [
            (3, b' '),
            (7, b' '),
            (10, b' '),
            (13, b':'),
            (16, b':'),
            (19, b' '),
        ] {
            assert_eq!(bytes[i], expected, "{text:?} at {i}");
        }
        assert!(!text.ends_with('\n'));
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn matches_the_c_library() {
        for secs in [
            0i64,
            1_402_345_985,
            1_616_838_718,
            2_000_000_000,
            -86_400 * 400,
        ] {
            let mut buf = [0 as libc::c_char; 64];
            let t = secs as libc::time_t;
            // SAFETY: glibc's ctime_r writes at most 26 bytes into `buf`,
            // which has 64; both pointers are valid for the call.
            let c_text = unsafe {
                assert!(!libc::ctime_r(&t, buf.as_mut_ptr()).is_null());
                std::ffi::CStr::from_ptr(buf.as_ptr())
                    .to_string_lossy()
                    .into_owned()
            };
            assert_eq!(format!("{}\n", ctime(secs)), c_text);
        }
    }

    #[test]
    fn now_has_the_same_shape() {
        assert_eq!(ctime_now().len(), 24);
    }
}
