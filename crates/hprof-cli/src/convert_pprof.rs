//! `hprof-rs convert --to pprof`: a table of the profile as google/pprof's
//! `profile.proto`, gzipped, the format `go tool pprof`, Pyroscope and
//! Parca read. The few messages needed are declared here with prost's
//! derive (field numbers from profile.proto), so no protoc is needed.

use super::sample_table::{Kind, Samples};
use flate2::Compression;
use flate2::write::GzEncoder;
use prost::Message;
use std::collections::HashMap;
use std::io::Write;

#[derive(Clone, PartialEq, prost::Message)]
struct PprofProfile {
    #[prost(message, repeated, tag = "1")]
    sample_type: Vec<ValueType>,
    #[prost(message, repeated, tag = "2")]
    sample: Vec<PprofSample>,
    #[prost(message, repeated, tag = "4")]
    location: Vec<Location>,
    #[prost(message, repeated, tag = "5")]
    function: Vec<Function>,
    #[prost(string, repeated, tag = "6")]
    string_table: Vec<String>,
    #[prost(message, optional, tag = "11")]
    period_type: Option<ValueType>,
    #[prost(int64, tag = "12")]
    period: i64,
    #[prost(int64, repeated, tag = "13")]
    comment: Vec<i64>,
    #[prost(int64, tag = "14")]
    default_sample_type: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
struct ValueType {
    #[prost(int64, tag = "1")]
    r#type: i64,
    #[prost(int64, tag = "2")]
    unit: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
struct PprofSample {
    /// Innermost first.
    #[prost(uint64, repeated, tag = "1")]
    location_id: Vec<u64>,
    #[prost(int64, repeated, tag = "2")]
    value: Vec<i64>,
    #[prost(message, repeated, tag = "3")]
    label: Vec<Label>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Label {
    #[prost(int64, tag = "1")]
    key: i64,
    #[prost(int64, tag = "2")]
    str: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Location {
    #[prost(uint64, tag = "1")]
    id: u64,
    #[prost(message, repeated, tag = "4")]
    line: Vec<Line>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Line {
    #[prost(uint64, tag = "1")]
    function_id: u64,
    #[prost(int64, tag = "2")]
    line: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Function {
    #[prost(uint64, tag = "1")]
    id: u64,
    #[prost(int64, tag = "2")]
    name: i64,
    #[prost(int64, tag = "3")]
    system_name: i64,
    #[prost(int64, tag = "4")]
    filename: i64,
}

/// Builds the tables of one profile message: strings, functions and
/// locations each stored once, ids from 1 (0 means none in pprof).
#[derive(Default)]
struct Builder<'a> {
    strings: HashMap<String, i64>,
    string_table: Vec<String>,
    /// (name, file) -> function id, names borrowed from the profile.
    functions: HashMap<(&'a str, Option<&'a str>), u64>,
    function_list: Vec<Function>,
    locations: HashMap<(u64, i64), u64>,
    location_list: Vec<Location>,
}

impl<'a> Builder<'a> {
    fn new() -> Self {
        let mut builder = Builder::default();
        // pprof requires the empty string at index 0.
        builder.string("");
        builder
    }

    fn string(&mut self, text: &str) -> i64 {
        if let Some(&at) = self.strings.get(text) {
            return at;
        }
        let at = self.string_table.len() as i64;
        self.strings.insert(text.to_owned(), at);
        self.string_table.push(text.to_owned());
        at
    }

    fn value_type(&mut self, kind: Kind) -> ValueType {
        ValueType {
            r#type: self.string(kind.name),
            unit: self.string(kind.unit),
        }
    }

    fn function(&mut self, name: &'a str, file: Option<&'a str>) -> u64 {
        let key = (name, file);
        if let Some(&id) = self.functions.get(&key) {
            return id;
        }
        let id = self.function_list.len() as u64 + 1;
        let name = self.string(name);
        let filename = file.map_or(0, |f| self.string(f));
        self.function_list.push(Function {
            id,
            name,
            system_name: name,
            filename,
        });
        self.functions.insert(key, id);
        id
    }

    fn location(&mut self, name: &'a str, file: Option<&'a str>, line: Option<u32>) -> u64 {
        let function_id = self.function(name, file);
        let line = line.map_or(0, i64::from);
        if let Some(&id) = self.locations.get(&(function_id, line)) {
            return id;
        }
        let id = self.location_list.len() as u64 + 1;
        self.location_list.push(Location {
            id,
            line: vec![Line { function_id, line }],
        });
        self.locations.insert((function_id, line), id);
        id
    }
}

/// pprof's values are signed: a count past i64::MAX (only in a damaged
/// file) is capped.
fn signed(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// The profile message of `samples`, with `comments` (the file's header).
fn message(samples: &Samples, comments: &[String]) -> PprofProfile {
    let mut b = Builder::new();
    let sample_type: Vec<ValueType> = samples.kinds.iter().map(|&k| b.value_type(k)).collect();
    let thread_key = b.string("thread");
    let monitor_key = b.string("monitor");
    let state_key = b.string("state");
    let mut out = Vec::with_capacity(samples.samples.len());
    for sample in &samples.samples {
        let mut location_id = Vec::with_capacity(sample.frames.len() + 1);
        if let Some(leaf) = sample.leaf {
            location_id.push(b.location(leaf, None, None));
        }
        for (at, frame) in sample.frames.iter().enumerate() {
            let source = sample.sources.get(at);
            let file = source.and_then(|s| s.file.as_deref());
            location_id.push(b.location(frame, file, source.and_then(|s| s.line)));
        }
        if sample.frames.is_empty() {
            location_id.push(b.location(super::collapse::EMPTY_TRACE, None, None));
        }
        let mut label = Vec::new();
        let labels = [
            (thread_key, sample.thread.as_deref()),
            (monitor_key, sample.monitor),
            (state_key, sample.state),
        ];
        for (key, text) in labels {
            if let Some(text) = text {
                let str = b.string(text);
                label.push(Label { key, str });
            }
        }
        out.push(PprofSample {
            location_id,
            value: sample.values.iter().map(|&v| signed(v)).collect(),
            label,
        });
    }
    let period_type = samples.period.map(|(k, _)| b.value_type(k));
    let comment = comments.iter().map(|c| b.string(c)).collect();
    PprofProfile {
        default_sample_type: sample_type[samples.main].r#type,
        sample_type,
        sample: out,
        location: b.location_list,
        function: b.function_list,
        string_table: b.string_table,
        period_type,
        period: samples.period.map_or(0, |(_, p)| signed(p)),
        comment,
    }
}

/// Writes `samples` as a gzipped profile.proto message to `out`.
pub fn write(samples: &Samples, comments: &[String], out: impl Write) -> Result<(), String> {
    let bytes = message(samples, comments).encode_to_vec();
    let mut gzip = GzEncoder::new(out, Compression::default());
    gzip.write_all(&bytes)
        .and_then(|()| gzip.finish().map(drop))
        .map_err(|e| format!("cannot write the pprof file: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::read_ascii;
    use crate::sample_table::{self, Table};

    const ASCII: &str = "JAVA PROFILE 1.0.1, created Thu Nov  2 17:11:21 2017\n\
\n\
--------\n\
\n\
THREAD START (obj=50000150, id = 200001, name=\"main\", group=\"main\")\n\
TRACE 300001: (thread=200001)\n\
\tHot.leaf(Hot.java:5)\n\
\tHot.main(Hot.java:9)\n\
TRACE 300002: (thread=200001)\n\
\tHot.other(Hot.java:7)\n\
\tHot.main(Hot.java:10)\n\
CPU SAMPLES BEGIN (total = 12) Thu Nov  2 17:11:22 2017\n\
rank   self  accum   count trace method\n\
   1 58.33% 58.33%       7 300001 Hot.leaf\n\
   2 25.00% 83.33%       3 300002 Hot.other\n\
CPU SAMPLES END\n";

    #[test]
    fn the_message_holds_every_sample_and_the_rest_below_the_cutoff() {
        let profile = read_ascii(ASCII.as_bytes()).unwrap();
        let samples = sample_table::samples(&profile, Table::Cpu, 10);
        let message = message(&samples, &["header".into()]);
        let total: i64 = message.sample.iter().map(|s| s.value[0]).sum();
        assert_eq!(total, 12);
        let ns: i64 = message.sample.iter().map(|s| s.value[1]).sum();
        assert_eq!(ns, 120_000_000);
        assert_eq!(message.string_table[0], "");
        let name = |i: i64| message.string_table[i as usize].as_str();
        let first = &message.sample[0];
        let leaf = &message.location[first.location_id[0] as usize - 1];
        assert_eq!(leaf.line[0].line, 5);
        let function = &message.function[leaf.line[0].function_id as usize - 1];
        assert_eq!(name(function.name), "Hot.leaf");
        assert_eq!(name(function.filename), "Hot.java");
        assert_eq!(name(first.label[0].key), "thread");
        assert_eq!(name(first.label[0].str), "main");
        let rest = &message.sample[2];
        assert_eq!(rest.value[0], 2);
        // Round trip through prost: what go tool pprof gets is what we built.
        let decoded = PprofProfile::decode(&message.encode_to_vec()[..]).unwrap();
        assert_eq!(decoded, message);
    }
}
