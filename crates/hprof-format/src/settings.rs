//! The settings of a run that an hprof-rs file carries for the tools that
//! read it, beyond what HPROF's formats hold (the binary CONTROL SETTINGS
//! record has the depth, ASCII files have nothing): one line,
//!
//! ```text
//! hprof-rs settings: depth=16 interval=10
//! ```
//!
//! written among the prose of the ASCII prelude (before `--------`, which
//! every reader skips) and as the text of a binary UTF8 record that no other
//! record names (a string every reader keeps or passes over). A reader
//! takes the keys it knows and ignores the others, so keys can be added.

/// What the settings line starts with.
pub const PREFIX: &str = "hprof-rs settings:";

/// What a run's traces and samples were taken with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunSettings {
    /// `depth=`: the most frames a trace keeps. A trace with exactly this
    /// many frames may have been cut; one with fewer is whole.
    pub depth: Option<u32>,
    /// The most frames of a SITES trace when fewer than `depth` (traces
    /// kept in calling contexts, `alloc_count=bytecode`, have 4 at most).
    pub sites_depth: Option<u32>,
    /// `interval=`: the CPU sampling interval in milliseconds.
    pub interval_ms: Option<u32>,
    /// `wall_clock=1`: the CPU SAMPLES are wall-clock samples (`cpu=wall`:
    /// every thread, whatever it was doing), not samples of CPU use.
    pub wall_clock: Option<u32>,
}

impl RunSettings {
    /// The settings line, without a line end.
    pub fn line(&self) -> String {
        let pairs = [
            ("depth", self.depth),
            ("sites_depth", self.sites_depth),
            ("interval", self.interval_ms),
            ("wall_clock", self.wall_clock),
        ];
        let mut line = PREFIX.to_owned();
        for (key, value) in pairs {
            if let Some(value) = value {
                line.push_str(&format!(" {key}={value}"));
            }
        }
        line
    }

    /// The settings of one line, if it is a settings line. Words that are
    /// not `key=number` with a known key are passed over.
    pub fn from_line(line: &str) -> Option<RunSettings> {
        let rest = line.trim_end().strip_prefix(PREFIX)?;
        let mut settings = RunSettings::default();
        for word in rest.split_whitespace() {
            let Some((key, value)) = word.split_once('=') else {
                continue;
            };
            let Ok(value) = value.parse::<u32>() else {
                continue;
            };
            match key {
                "depth" => settings.depth = Some(value),
                "sites_depth" => settings.sites_depth = Some(value),
                "interval" => settings.interval_ms = Some(value),
                "wall_clock" => settings.wall_clock = Some(value),
                _ => {}
            }
        }
        Some(settings)
    }

    /// The settings of the first settings line in `text` (an ASCII prelude).
    pub fn find_in(text: &str) -> Option<RunSettings> {
        text.lines().find_map(RunSettings::from_line)
    }

    /// Whether the file's CPU SAMPLES are wall-clock samples (`cpu=wall`).
    pub fn is_wall_clock(&self) -> bool {
        self.wall_clock.is_some_and(|v| v != 0)
    }

    /// The most frames a trace of the SITES table keeps.
    pub fn sites_trace_depth(&self) -> Option<u32> {
        self.sites_depth.or(self.depth)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_reads_back_and_leaves_out_what_is_unknown() {
        let all = RunSettings {
            depth: Some(16),
            sites_depth: Some(4),
            interval_ms: Some(7),
            wall_clock: None,
        };
        assert_eq!(
            all.line(),
            "hprof-rs settings: depth=16 sites_depth=4 interval=7"
        );
        assert_eq!(RunSettings::from_line(&all.line()), Some(all));
        let depth_only = RunSettings {
            depth: Some(4),
            ..RunSettings::default()
        };
        assert_eq!(depth_only.line(), "hprof-rs settings: depth=4");
        assert_eq!(RunSettings::from_line(&depth_only.line()), Some(depth_only));
        assert_eq!(all.sites_trace_depth(), Some(4));
        assert_eq!(depth_only.sites_trace_depth(), Some(4));
    }

    #[test]
    fn unknown_keys_and_bad_values_are_passed_over() {
        let read = RunSettings::from_line(
            "hprof-rs settings: colour=red depth=x depth=8 odd interval=20\r",
        )
        .unwrap();
        assert_eq!(
            read,
            RunSettings {
                depth: Some(8),
                sites_depth: None,
                interval_ms: Some(20),
                wall_clock: None,
            }
        );
        assert_eq!(RunSettings::from_line("depth=8"), None);
        let wall = RunSettings::from_line("hprof-rs settings: interval=10 wall_clock=1").unwrap();
        assert!(wall.is_wall_clock());
        assert!(!read.is_wall_clock());
        assert_eq!(RunSettings::from_line(" hprof-rs settings: depth=8"), None);
    }

    #[test]
    fn the_first_settings_line_of_a_prelude_is_found() {
        let prelude = "This file was written by hprof-rs.\n\nhprof-rs settings: depth=12\n\
                       hprof-rs settings: depth=99\n";
        assert_eq!(RunSettings::find_in(prelude).unwrap().depth, Some(12));
        assert_eq!(RunSettings::find_in("HPROF's own prelude\n"), None);
    }
}
