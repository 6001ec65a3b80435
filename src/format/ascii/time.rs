//! `ctime`-style time stamps, as the original agent printed them with glibc.

use std::time::{SystemTime, UNIX_EPOCH};

const WEEKDAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

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
/// newline: `Www Mmm dd hh:mm:ss yyyy`, the day padded with a space.
///
/// A time the C library cannot convert gives `??? ??? ?? ??:??:?? ????`
/// (where C `ctime` would return NULL).
pub fn ctime(secs_since_epoch: i64) -> String {
    match local_tm(secs_since_epoch) {
        Some(tm) => format_tm(&tm),
        None => "??? ??? ?? ??:??:?? ????".to_string(),
    }
}

fn local_tm(secs: i64) -> Option<libc::tm> {
    let t = libc::time_t::try_from(secs).ok()?;
    // SAFETY: `tm` is a plain C struct for which all-zero bytes are a valid
    // value; `localtime_r` only reads `t` and writes into `tm`, both of which
    // live for the whole call, and it keeps no pointer to either afterwards.
    unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&t, &mut tm).is_null() {
            return None;
        }
        Some(tm)
    }
}

fn format_tm(tm: &libc::tm) -> String {
    // Same layout as asctime: "%.3s %.3s%3d %.2d:%.2d:%.2d %d".
    let weekday = usize::try_from(tm.tm_wday)
        .ok()
        .and_then(|i| WEEKDAYS.get(i))
        .unwrap_or(&"???");
    let month = usize::try_from(tm.tm_mon)
        .ok()
        .and_then(|i| MONTHS.get(i))
        .unwrap_or(&"???");
    format!(
        "{weekday} {month}{:3} {:02}:{:02}:{:02} {}",
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        i64::from(tm.tm_year) + 1900
    )
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

    #[test]
    fn single_digit_days_are_space_padded() {
        let tm = libc::tm {
            tm_sec: 5,
            tm_min: 33,
            tm_hour: 20,
            tm_mday: 9,
            tm_mon: 5,
            tm_year: 114,
            tm_wday: 1,
            // SAFETY: the remaining fields are plain integers or a pointer
            // that may be null; all-zero bytes are valid for them.
            ..unsafe { std::mem::zeroed() }
        };
        assert_eq!(format_tm(&tm), "Mon Jun  9 20:33:05 2014");
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
