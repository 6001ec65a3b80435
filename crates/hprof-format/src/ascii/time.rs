//! `ctime`-style time stamps, as the original agent printed them with glibc:
//! `Www Mmm dd hh:mm:ss yyyy`, the day padded with a space. Turning a clock
//! reading into local calendar fields needs the C library's time zone
//! rules, so the caller does that and hands the fields over.

const WEEKDAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// A local time broken down as C's `struct tm` holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CalendarTime {
    /// The full year, e.g. 2014.
    pub year: i64,
    /// 0 (January) to 11.
    pub month: i32,
    /// 1 to 31.
    pub day: i32,
    /// 0 to 23.
    pub hour: i32,
    /// 0 to 59.
    pub minute: i32,
    /// 0 to 60 (60: a leap second, as `struct tm` allows).
    pub second: i32,
    /// 0 (Sunday) to 6.
    pub weekday: i32,
}

/// What C `ctime` returns NULL for (a time it cannot convert), as printed.
pub const UNKNOWN_TIME: &str = "??? ??? ?? ??:??:?? ????";

/// `time` in glibc `ctime` layout without the newline (the same layout as
/// `asctime`: `"%.3s %.3s%3d %.2d:%.2d:%.2d %d"`).
pub fn ctime_text(time: &CalendarTime) -> String {
    let weekday = usize::try_from(time.weekday)
        .ok()
        .and_then(|i| WEEKDAYS.get(i))
        .unwrap_or(&"???");
    let month = usize::try_from(time.month)
        .ok()
        .and_then(|i| MONTHS.get(i))
        .unwrap_or(&"???");
    format!(
        "{weekday} {month}{:3} {:02}:{:02}:{:02} {}",
        time.day, time.hour, time.minute, time.second, time.year
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_digit_days_are_space_padded() {
        let time = CalendarTime {
            year: 2014,
            month: 5,
            day: 9,
            hour: 20,
            minute: 33,
            second: 5,
            weekday: 1,
        };
        assert_eq!(ctime_text(&time), "Mon Jun  9 20:33:05 2014");
        assert_eq!(ctime_text(&time).len(), UNKNOWN_TIME.len());
    }

    #[test]
    fn fields_out_of_range_print_question_marks() {
        let time = CalendarTime {
            year: 2014,
            month: 12,
            day: 19,
            hour: 1,
            minute: 2,
            second: 3,
            weekday: -1,
        };
        assert_eq!(ctime_text(&time), "??? ??? 19 01:02:03 2014");
    }
}
