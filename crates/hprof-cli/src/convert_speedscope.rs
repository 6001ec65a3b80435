//! `hprof-rs convert --to speedscope`: a table of the profile in
//! speedscope's JSON file format (sampled profiles), which speedscope and
//! the Firefox Profiler open. One profile per thread when the file has
//! threads (`thread=y`), else one; each weighs its stacks by the table's
//! main value (samples, CPU time, allocated bytes, contention delay).

use super::sample_table::{Samples, Table};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::io::Write;

/// The schema every speedscope file names.
const SCHEMA: &str = "https://www.speedscope.app/file-format-schema.json";

#[derive(Serialize)]
struct File<'a> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    shared: Shared<'a>,
    profiles: Vec<Profile>,
    name: String,
    #[serde(rename = "activeProfileIndex")]
    active_profile_index: usize,
    exporter: String,
}

#[derive(Serialize)]
struct Shared<'a> {
    frames: Vec<Frame<'a>>,
}

/// A frame, its names borrowed from the profile.
#[derive(Serialize, PartialEq, Eq, Hash, Clone, Copy)]
struct Frame<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<u32>,
}

#[derive(Serialize)]
struct Profile {
    #[serde(rename = "type")]
    kind: &'static str,
    name: String,
    unit: &'static str,
    #[serde(rename = "startValue")]
    start_value: u64,
    #[serde(rename = "endValue")]
    end_value: u64,
    /// Frame indices, root first.
    samples: Vec<Vec<usize>>,
    weights: Vec<u64>,
}

/// speedscope's unit for the main value of `table`, and the divisor that
/// turns our value into it (CPU and delays are kept in nanoseconds).
fn unit(table: Table) -> &'static str {
    match table {
        Table::Cpu => "none",
        Table::Sites => "bytes",
        Table::Time | Table::Monitor | Table::Lock => "nanoseconds",
    }
}

/// Frames stored once, by index.
#[derive(Default)]
struct Frames<'a> {
    index: HashMap<Frame<'a>, usize>,
    list: Vec<Frame<'a>>,
}

impl<'a> Frames<'a> {
    fn add(&mut self, frame: Frame<'a>) -> usize {
        if let Some(&at) = self.index.get(&frame) {
            return at;
        }
        self.list.push(frame);
        self.index.insert(frame, self.list.len() - 1);
        self.list.len() - 1
    }
}

/// The speedscope document of `samples`, named `name`.
fn document<'a>(samples: &'a Samples, name: &str) -> File<'a> {
    let mut frames = Frames::default();
    // Thread name (or the table's title when there are none) -> profile.
    let mut by_thread: BTreeMap<&str, Profile> = BTreeMap::new();
    for sample in &samples.samples {
        let weight = sample.values[samples.main];
        if weight == 0 {
            continue;
        }
        let mut stack: Vec<usize> = sample
            .frames
            .iter()
            .enumerate()
            .rev()
            .map(|(at, frame)| {
                let source = sample.sources.get(at);
                frames.add(Frame {
                    name: frame,
                    file: source.and_then(|s| s.file.as_deref()),
                    line: source.and_then(|s| s.line),
                })
            })
            .collect();
        if sample.frames.is_empty() {
            stack.push(frames.add(plain(super::collapse::EMPTY_TRACE)));
        }
        if let Some(leaf) = sample.leaf {
            stack.push(frames.add(plain(leaf)));
        }
        let thread = sample.thread.as_deref().unwrap_or("");
        let profile = by_thread.entry(thread).or_insert_with(|| Profile {
            kind: "sampled",
            name: if thread.is_empty() {
                samples.table.title().to_owned()
            } else {
                format!("{} ({thread})", samples.table.title())
            },
            unit: unit(samples.table),
            start_value: 0,
            end_value: 0,
            samples: Vec::new(),
            weights: Vec::new(),
        });
        profile.samples.push(stack);
        profile.weights.push(weight);
        profile.end_value = profile.end_value.saturating_add(weight);
    }
    File {
        schema: SCHEMA,
        shared: Shared {
            frames: frames.list,
        },
        profiles: by_thread.into_values().collect(),
        name: name.to_owned(),
        active_profile_index: 0,
        exporter: format!("hprof-rs {}", env!("CARGO_PKG_VERSION")),
    }
}

fn plain(name: &str) -> Frame<'_> {
    Frame {
        name,
        file: None,
        line: None,
    }
}

/// Writes `samples` as a speedscope file named `name` to `out`.
pub fn write(samples: &Samples, name: &str, out: impl Write) -> Result<(), String> {
    serde_json::to_writer(out, &document(samples, name))
        .map_err(|e| format!("cannot write the speedscope file: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::read_ascii;
    use crate::sample_table;

    #[test]
    fn one_profile_per_thread_root_first_weights_summing_to_the_total() {
        let text = "JAVA PROFILE 1.0.1, created Thu Nov  2 17:11:21 2017\n\n--------\n\n\
THREAD START (obj=1, id = 200001, name=\"main\", group=\"main\")\n\
THREAD START (obj=2, id = 200002, name=\"worker\", group=\"main\")\n\
TRACE 300001: (thread=200001)\n\tHot.leaf(Hot.java:5)\n\tHot.main(Hot.java:9)\n\
TRACE 300002: (thread=200002)\n\tHot.leaf(Hot.java:5)\n\tHot.run(Hot.java:Unknown line)\n\
CPU SAMPLES BEGIN (total = 10) Thu Nov  2 17:11:22 2017\n\
rank   self  accum   count trace method\n\
   1 70.00% 70.00%       7 300001 Hot.leaf\n\
   2 30.00% 100.00%       3 300002 Hot.leaf\n\
CPU SAMPLES END\n";
        let profile = read_ascii(text.as_bytes()).unwrap();
        let samples = sample_table::samples(&profile, Table::Cpu, 10);
        let file = document(&samples, "t");
        assert_eq!(file.profiles.len(), 2);
        let total: u64 = file.profiles.iter().flat_map(|p| &p.weights).sum();
        assert_eq!(total, 10);
        let main = &file.profiles[0];
        assert_eq!(main.name, "CPU SAMPLES (main)");
        let names: Vec<&str> = main.samples[0]
            .iter()
            .map(|&i| file.shared.frames[i].name)
            .collect();
        assert_eq!(names, ["Hot.main", "Hot.leaf"]);
        // The same frame at the same line is stored once.
        assert_eq!(file.shared.frames.len(), 3);
    }
}
