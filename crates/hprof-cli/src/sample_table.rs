//! A profile's tables as the converters and the report see them: one table
//! (CPU SAMPLES, CPU TIME, SITES, MONITOR TIME or LOCK TIME) as samples,
//! each a stack with the thread it ran on and one value per kind of cost,
//! and the table's totals, which the file states and the samples sum to.

use super::profile::{Profile, SourceLine, Weighted, state_of_leaf};
use std::borrow::Cow;

/// Which table of the file to convert.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Table {
    /// CPU SAMPLES (cpu=samples).
    Cpu,
    /// CPU TIME (cpu=times).
    Time,
    /// SITES (heap=sites, or the SITES of heap=all).
    Sites,
    /// MONITOR TIME (monitor=y).
    Monitor,
    /// LOCK TIME (monitor=y, java.util.concurrent locks).
    Lock,
}

impl Table {
    pub fn name(self) -> &'static str {
        match self {
            Table::Cpu => "cpu",
            Table::Time => "time",
            Table::Sites => "sites",
            Table::Monitor => "monitor",
            Table::Lock => "lock",
        }
    }

    /// The section's title in the file.
    pub fn title(self) -> &'static str {
        match self {
            Table::Cpu => "CPU SAMPLES",
            Table::Time => "CPU TIME",
            Table::Sites => "SITES",
            Table::Monitor => "MONITOR TIME",
            Table::Lock => "LOCK TIME",
        }
    }
}

/// A kind of value and its unit, as pprof names them (`samples`/`count`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kind {
    pub name: &'static str,
    pub unit: &'static str,
}

const fn kind(name: &'static str, unit: &'static str) -> Kind {
    Kind { name, unit }
}

/// One stack and its values, one per [`Samples::kinds`]; names are
/// borrowed from the profile (a big file has millions of frames).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample<'a> {
    /// `class.method` frames, innermost first.
    pub frames: Cow<'a, [String]>,
    /// Source file and line of each frame (may be shorter: unknown).
    pub sources: &'a [SourceLine],
    /// Drawn as the innermost frame: the allocated class of a site.
    pub leaf: Option<&'a str>,
    /// The thread's name, with `thread=y`.
    pub thread: Option<Cow<'a, str>>,
    /// The monitor's or lock's class, for contention.
    pub monitor: Option<&'a str>,
    /// cpu=wall: the state the thread was in (its leaf names it too).
    pub state: Option<&'static str>,
    pub values: Vec<u64>,
}

/// One table of a profile as samples.
#[derive(Debug, Clone)]
pub struct Samples<'a> {
    pub table: Table,
    pub kinds: Vec<Kind>,
    /// The kind speedscope and the report weigh stacks by.
    pub main: usize,
    pub samples: Vec<Sample<'a>>,
    /// The table's totals as the file states them, one per kind.
    pub totals: Vec<u64>,
    /// pprof's sampling period: CPU SAMPLES' interval in nanoseconds.
    pub period: Option<(Kind, u64)>,
}

pub use super::profile::BELOW_CUTOFF;

const NS_PER_MS: u64 = 1_000_000;

/// A CPU table that is not there: no rows, a total of 0.
static NO_STACKS: (Vec<Weighted>, u64) = (Vec::new(), 0);

/// The tables `profile` holds, in the order `convert` picks the first of.
pub fn available(profile: &Profile) -> Vec<Table> {
    let present = [
        (profile.samples.is_some(), Table::Cpu),
        (profile.times.is_some(), Table::Time),
        (profile.sites.is_some(), Table::Sites),
        (profile.monitor_time.is_some(), Table::Monitor),
        (profile.lock_time.is_some(), Table::Lock),
    ];
    present.iter().filter(|p| p.0).map(|p| p.1).collect()
}

/// `table` if given and present, else the first present.
pub fn choose(profile: &Profile, table: Option<Table>) -> Result<Table, String> {
    let tables = available(profile);
    let names: Vec<&str> = tables.iter().map(|t| t.name()).collect();
    let held = if names.is_empty() {
        "it holds no CPU, SITES, MONITOR TIME or LOCK TIME table".to_owned()
    } else {
        format!("it holds: {}", names.join(", "))
    };
    match table {
        Some(t) if tables.contains(&t) => Ok(t),
        Some(t) => Err(format!("the profile has no {} table ({held})", t.title())),
        None => tables.first().copied().ok_or(held),
    }
}

fn thread_of(profile: &Profile, trace: u32) -> Option<Cow<'_, str>> {
    let serial = profile.traces.get(&trace)?.thread?;
    Some(profile.threads.get(&serial).map_or_else(
        || Cow::Owned(format!("thread {serial}")),
        |name| Cow::Borrowed(name.as_str()),
    ))
}

fn sources_of(profile: &Profile, trace: u32) -> &[SourceLine] {
    profile.traces.get(&trace).map_or(&[], |t| &t.sources)
}

fn sample<'a>(
    profile: &'a Profile,
    frames: Cow<'a, [String]>,
    trace: u32,
    values: Vec<u64>,
) -> Sample<'a> {
    Sample {
        frames,
        sources: sources_of(profile, trace),
        leaf: None,
        thread: thread_of(profile, trace),
        monitor: None,
        state: None,
        values,
    }
}

fn sum(values: impl Iterator<Item = u64>) -> u64 {
    values.fold(0, u64::saturating_add)
}

/// The table `table` of `profile` as samples; `interval_ms` is the CPU
/// sampling interval (the file's, [`Profile::interval_ms`], or the user's).
pub fn samples(profile: &Profile, table: Table, interval_ms: u64) -> Samples<'_> {
    let interval_ns = interval_ms.saturating_mul(NS_PER_MS);
    match table {
        Table::Cpu => {
            let (stacks, total) = profile.samples.as_ref().unwrap_or(&NO_STACKS);
            let total = *total;
            // cpu=wall's samples are of wall-clock time, each with its state.
            let clock = match profile.settings.is_wall_clock() {
                true => kind("wall", "nanoseconds"),
                false => kind("cpu", "nanoseconds"),
            };
            let mut samples: Vec<Sample> = stacks
                .iter()
                .map(|w| {
                    let values = vec![w.value, w.value.saturating_mul(interval_ns)];
                    let mut one = sample(profile, Cow::Borrowed(&w.frames), w.trace, values);
                    if let Some(state) = w.class.as_deref().and_then(state_of_leaf) {
                        one.leaf = w.class.as_deref();
                        one.state = Some(state);
                    }
                    one
                })
                .collect();
            let listed = sum(stacks.iter().map(|w| w.value));
            if listed < total {
                let rest = total - listed;
                let frames = Cow::Owned(vec![BELOW_CUTOFF.to_owned()]);
                let values = vec![rest, rest.saturating_mul(interval_ns)];
                samples.push(sample(profile, frames, 0, values));
            }
            Samples {
                table,
                kinds: vec![kind("samples", "count"), clock],
                main: 0,
                totals: vec![
                    total.max(listed),
                    total.max(listed).saturating_mul(interval_ns),
                ],
                samples,
                period: Some((clock, interval_ns)),
            }
        }
        Table::Time => {
            let (stacks, total) = profile.times.as_ref().unwrap_or(&NO_STACKS);
            let value = |w: &Weighted| vec![w.calls, w.value.saturating_mul(NS_PER_MS)];
            let samples: Vec<Sample> = stacks
                .iter()
                .map(|w| sample(profile, Cow::Borrowed(&w.frames), w.trace, value(w)))
                .collect();
            Samples {
                table,
                kinds: vec![kind("calls", "count"), kind("time", "nanoseconds")],
                main: 1,
                totals: vec![
                    sum(stacks.iter().map(|w| w.calls)),
                    total.saturating_mul(NS_PER_MS),
                ],
                samples,
                period: None,
            }
        }
        Table::Sites => {
            let sites = profile.sites.as_deref().unwrap_or_default();
            let mut samples: Vec<Sample> = sites
                .iter()
                .map(|s| {
                    let values = vec![
                        s.allocated_objects,
                        s.allocated_bytes,
                        s.live_objects,
                        s.live_bytes,
                    ];
                    let mut one = sample(profile, Cow::Borrowed(&s.frames), s.trace, values);
                    one.leaf = Some(&s.class);
                    one
                })
                .collect();
            // What the cutoff left out, so that the totals are the file's.
            if let Some(cut) = profile.sites_below_cutoff() {
                let frames = Cow::Owned(vec![BELOW_CUTOFF.to_owned()]);
                let values = vec![
                    cut.allocated_objects,
                    cut.allocated_bytes,
                    cut.live_objects,
                    cut.live_bytes,
                ];
                samples.push(sample(profile, frames, 0, values));
            }
            let totals = (0..4)
                .map(|i| sum(samples.iter().map(|s| s.values[i])))
                .collect();
            Samples {
                table,
                kinds: vec![
                    kind("alloc_objects", "count"),
                    kind("alloc_space", "bytes"),
                    kind("inuse_objects", "count"),
                    kind("inuse_space", "bytes"),
                ],
                main: 1,
                samples,
                totals,
                period: None,
            }
        }
        Table::Monitor | Table::Lock => {
            let contention = if table == Table::Monitor {
                profile.monitor_time.as_ref()
            } else {
                profile.lock_time.as_ref()
            };
            let rows = contention.map_or(&[][..], |c| &c.rows[..]);
            let samples: Vec<Sample> = rows
                .iter()
                .map(|r| {
                    let values = vec![r.count, r.delay_ms.saturating_mul(NS_PER_MS)];
                    let mut one = sample(profile, Cow::Borrowed(&r.frames), r.trace, values);
                    one.monitor = Some(&r.monitor);
                    one
                })
                .collect();
            let total_ms = contention.map_or(0, |c| c.total_ms);
            Samples {
                table,
                kinds: vec![kind("contentions", "count"), kind("delay", "nanoseconds")],
                main: 1,
                totals: vec![
                    sum(rows.iter().map(|r| r.count)),
                    total_ms.saturating_mul(NS_PER_MS),
                ],
                samples,
                period: Some((kind("contentions", "count"), 1)),
            }
        }
    }
}

impl Samples<'_> {
    /// The frames of a sample root first, the leaf (if any) last: the order
    /// of folded stacks and speedscope.
    pub fn root_first<'s>(sample: &'s Sample) -> Vec<&'s str> {
        let mut frames: Vec<&str> = sample.frames.iter().rev().map(String::as_str).collect();
        if frames.is_empty() {
            frames.push(super::collapse::EMPTY_TRACE);
        }
        if let Some(leaf) = &sample.leaf {
            frames.push(leaf);
        }
        frames
    }
}
