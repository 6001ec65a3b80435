//! The SITES rows of `alloc_count=bytecode` at a dump: the counters read,
//! the classes they name found and tagged, each class's live objects
//! counted by a heap walk and shared among its rows (`live_sharing.rs`)
//! as the live sample says.

use super::counted_traces::intern_counted;
use super::counted_window::CountedWindow;
use super::counting::{BytecodeCounting, CountedRow};
use super::live_samples::LiveSamples;
use crate::agent::jvm::LocalClass;
use crate::agent::jvm::alloc_tracker;
use crate::agent::run::classes::intern_class;
use crate::agent::run::collection::may_force_collection;
use crate::agent::run::engine::Run;
use crate::emit::sites::SiteSnapshot;
use crate::model::Model;
use crate::model::SiteStats;
use crate::model::traces::EMPTY_TRACE_SERIAL;
use jvmti_bindings::prelude::*;
use rustc_hash::FxHashMap;
use std::collections::HashMap;

use super::live_sharing::{
    Sample, Sharer, merged_by_key, scaled_to_what_was_allocated, shares_by_allocation,
    shares_by_sample, with_bytes,
};
use super::rows::{PrintedTrace, Rows, add_row, printed_trace};
use super::sample_rows::{WalkedTrace, Walks, split_by_sample};

/// The bytecode counters as a dump's first step found them.
pub(super) struct CountedDump {
    rows: Vec<CountedRow>,
    /// What each site's first allocations were walked for (not counts).
    trace_walks: Vec<CountedRow>,
    /// Per allocated class signature: its serial and its live objects and
    /// bytes in the heap.
    classes: HashMap<String, (u32, (u64, u64))>,
    /// The live sample in the heap: objects per tag.
    sample_tags: FxHashMap<u64, u64>,
    /// The serials of the classes the rows' frames are in, by signature.
    frame_classes: HashMap<String, u32>,
}

/// Every count of the bytecode counters as it stands: the sites' and
/// those of the objects VM makers made.
pub(super) fn counters_now(
    run: &Run,
    counting: &BytecodeCounting,
    jni: &JniEnv,
) -> Vec<CountedRow> {
    let mut rows = counting.counted_rows(&run.jvmti.env(), jni);
    let model = run.model.lock();
    rows.extend(counting.made_rows(|tag| model.classes.get(tag).map(|c| c.signature.clone())));
    rows
}

/// The bytecode counters read (narrowed to `window`), the classes they
/// name found and tagged, and the live objects of those classes counted by
/// a walk of the heap.
pub(super) fn read_counted(
    run: &Run,
    counting: &BytecodeCounting,
    window: &CountedWindow,
    jni: &JniEnv,
) -> CountedDump {
    let env = run.jvmti.env();
    let mut rows = counters_now(run, counting, jni);
    if !window.is_whole() {
        rows = window.narrow(rows);
    }
    let trace_walks = counting.trace_walk_rows();
    let allocated = BytecodeCounting::allocated_signatures(&rows);
    // The classes of the frames, named by what the rewrite recorded, get
    // their serials here too, for the binary FRAME records.
    let mut wanted = BytecodeCounting::frame_signatures(&rows);
    wanted.extend(run.model.lock().frames.unnamed_classes().map(str::to_owned));
    wanted.extend(allocated.iter().cloned());
    let found = alloc_tracker::classes_named(&env, jni, &wanted);
    let mut tagged = HashMap::with_capacity(found.len());
    {
        let mut guard = run.model.lock();
        let model = &mut *guard;
        for (signature, class) in found {
            if let Some(known) = intern_class(
                &env,
                &mut model.classes,
                &model.objects,
                class.get(),
                EMPTY_TRACE_SERIAL,
            ) {
                tagged.insert(signature, (class, known.object_id, known.serial));
            }
        }
    }
    let frame_classes = tagged
        .iter()
        .map(|(signature, (_, _, serial))| (signature.clone(), *serial))
        .collect();
    tagged.retain(|signature, _| allocated.contains(signature));
    // The walk visits every object in the heap, garbage not yet collected
    // included, and HotSpot looks up two tags for each (its own and its
    // class's): at a program's exit the heap is mostly garbage (Rhino:
    // 3.4 s of walking). A collection first leaves only the live objects
    // to walk, on the GC's threads. (Every dump collects here, so a `net=`
    // request to collect first adds none: collects_before_each_dump.) Not
    // at the exit dump of a collector that can no longer collect then: the
    // file's prelude says its live counts include garbage.
    if may_force_collection(run)
        && let Err(e) = env.force_garbage_collection()
    {
        eprintln!(
            "HPROF ERROR: ForceGarbageCollection failed ({e:?}); live counts include garbage"
        );
    }
    let in_heap = alloc_tracker::live_by_class(&env).unwrap_or_else(|e| {
        eprintln!("HPROF ERROR: heap walk failed ({e:?}); live counts of heap=sites are 0");
        alloc_tracker::LiveInHeap::default()
    });
    let live = &in_heap.by_class;
    let by_tag: HashMap<String, (LocalClass<'_>, u64)> = tagged
        .iter()
        .map(|(signature, (class, tag, _))| (signature.clone(), (class.get(), *tag)))
        .collect();
    counting.learn_sizes(&env, jni, &by_tag, live);
    let mut classes: HashMap<String, (u32, (u64, u64))> = tagged
        .into_iter()
        .map(|(signature, (_, tag, serial))| {
            let alive = live.get(&tag).copied().unwrap_or_default();
            (signature, (serial, alive))
        })
        .collect();
    // The classes of the objects VMObjectAlloc reported (tagged when
    // their first object was counted).
    let model = run.model.lock();
    for (_, key) in model.sites.iter() {
        if let Some(class) = model.classes.by_serial(key.class_serial) {
            let alive = live.get(&class.object_id).copied().unwrap_or_default();
            classes
                .entry(class.signature.clone())
                .or_insert((class.serial, alive));
        }
    }
    drop(model);
    CountedDump {
        rows,
        trace_walks,
        classes,
        sample_tags: in_heap.sample_tags,
        frame_classes,
    }
}

/// The SITES rows of `alloc_count=bytecode`: one per (allocated class,
/// site frame) of the counters, and `event_sites` (the objects VMObjectAlloc
/// reported, untagged); each class's live objects, found by the heap walk,
/// shared among all its rows as the `live` sample says (by what each
/// allocated where the sample holds none of the class).
pub(super) fn counted_sites(
    run: &Run,
    model: &mut Model,
    counting: &BytecodeCounting,
    counted: CountedDump,
    event_sites: Vec<SiteSnapshot>,
    live: Option<&LiveSamples>,
) -> Vec<SiteSnapshot> {
    let mut rows: Rows = HashMap::new();
    let mut sharers: HashMap<u32, Vec<Sharer>> = HashMap::new();
    // Trace serials by what they print (thread and frames).
    let mut printed: HashMap<PrintedTrace, u32> = HashMap::new();
    let mut live_of: HashMap<u32, (u64, u64)> = HashMap::new();
    for &(serial, live) in counted.classes.values() {
        live_of.insert(serial, live);
    }
    for row in &counted.rows {
        let signature = row.identity.allocated.as_str();
        let Some(&(class_serial, _)) = counted.classes.get(signature) else {
            continue; // the class is gone (unloaded): nothing to name it by
        };
        let bytes = if row.instance {
            row.count.objects * counting.instance_size(signature).unwrap_or(0)
        } else {
            row.count.bytes
        };
        let trace_serial = row.identity.walked.unwrap_or_else(|| {
            intern_counted(&run.traces, model, row, |class, method| {
                counting.method_key(class, method)
            })
        });
        let trace_serial = *printed
            .entry(printed_trace(model, trace_serial))
            .or_insert(trace_serial);
        let key = (class_serial, trace_serial);
        let site = rows.entry(key).or_insert_with(|| SiteSnapshot {
            class_serial,
            trace_serial,
            class_signature: signature.to_owned(),
            stats: SiteStats::default(),
        });
        site.stats.allocated_objects += row.count.objects;
        site.stats.allocated_bytes += bytes;
        sharers.entry(class_serial).or_default().push(Sharer {
            objects: row.count.objects,
            bytes,
            key,
        });
    }
    for mut site in event_sites {
        if site.stats.allocated_objects == 0 {
            continue; // a site of the live sample only
        }
        // A stack walked for an object the VM made prints like the frames
        // a calling context names (the first call through a class being
        // loaded is walked): one row for both.
        site.trace_serial = *printed
            .entry(printed_trace(model, site.trace_serial))
            .or_insert(site.trace_serial);
        let key = (site.class_serial, site.trace_serial);
        sharers.entry(site.class_serial).or_default().push(Sharer {
            objects: site.stats.allocated_objects,
            bytes: site.stats.allocated_bytes,
            key,
        });
        site.stats.live_objects = 0;
        site.stats.live_bytes = 0;
        add_row(&mut rows, site);
    }
    if let Some(live) = live.filter(|live| live.splits_rows()) {
        let walked = walks_seen(counting, &counted, model);
        rows = split_by_sample(model, live, &walked, rows, &mut printed);
        sharers = sharers_of(&rows);
    }
    let sampled = live.map(|live| sampled_live(model, live, &counted.sample_tags, &printed));
    for (class_serial, sharers) in sharers {
        let sharers = merged_by_key(sharers);
        let class_live = live_of.get(&class_serial).copied().unwrap_or_default();
        let seen: Vec<(u64, u64)> = sharers
            .iter()
            .map(|s| {
                let seen = sampled.as_ref().and_then(|m| m.seen.get(&s.key));
                seen.copied().unwrap_or_default()
            })
            .collect();
        let estimates: Vec<(u64, u64)> = sharers
            .iter()
            .zip(&seen)
            .map(|(s, &seen)| match &sampled {
                Some(sampled) => {
                    let estimate = sampled.rows.get(&s.key).copied().unwrap_or_default();
                    if sampled.estimated {
                        scaled_to_what_was_allocated(estimate, seen, s.bytes)
                    } else {
                        estimate
                    }
                }
                None => (0, 0),
            })
            .collect();
        let objects = match &sampled {
            Some(sampled) if estimates.iter().any(|&(objects, _)| objects > 0) => {
                let elsewhere = sampled.elsewhere.get(&class_serial).copied();
                let (objects, bytes) = class_live;
                let (other_objects, other_bytes) = elsewhere.unwrap_or_default();
                // Once estimated, a few small samples can stand for more
                // objects than the class has: only their bytes, the steadier
                // estimate, are taken off then.
                let other_objects = if sampled.estimated { 0 } else { other_objects };
                let class_live = (
                    objects.saturating_sub(other_objects),
                    bytes.saturating_sub(other_bytes),
                );
                let sample = Sample {
                    estimates: &estimates,
                    seen: &seen,
                    estimated: sampled.estimated,
                };
                shares_by_sample(&sharers, &sample, class_live)
            }
            _ => shares_by_allocation(&sharers, class_live.0),
        };
        let shares = with_bytes(&sharers, objects);
        for (sharer, (objects, bytes)) in sharers.iter().zip(shares) {
            if let Some(site) = rows.get_mut(&sharer.key) {
                site.stats.live_objects += objects;
                site.stats.live_bytes += bytes;
            }
        }
    }
    let frame_classes = &counted.frame_classes;
    model
        .frames
        .name_classes(|signature| frame_classes.get(signature).copied());
    let mut sites: Vec<SiteSnapshot> = rows.into_values().collect();
    sites.sort_by_key(|s| (s.class_serial, s.trace_serial));
    sites
}

/// What the tracker's walks of the sites and those of the objects the VM
/// made saw; instances' bytes from their class's size.
fn walks_seen(counting: &BytecodeCounting, counted: &CountedDump, model: &Model) -> Walks {
    let tracker = counted
        .trace_walks
        .iter()
        .filter_map(|row| {
            let signature = row.identity.allocated.as_str();
            let &(class_serial, _) = counted.classes.get(signature)?;
            let trace_serial = row.identity.walked?;
            model.traces.get(trace_serial)?;
            let bytes = if row.instance {
                row.count.objects * counting.instance_size(signature).unwrap_or(0)
            } else {
                row.count.bytes
            };
            Some(WalkedTrace {
                class_serial,
                trace_serial,
                objects: row.count.objects,
                bytes,
            })
        })
        .collect();
    let vm_made = counting
        .vm_made_walks()
        .into_iter()
        .map(|((class_serial, trace_serial), count)| WalkedTrace {
            class_serial,
            trace_serial,
            objects: count.objects,
            bytes: count.bytes,
        })
        .collect();
    Walks { tracker, vm_made }
}

/// The sharers of each class's live objects: its rows.
fn sharers_of(rows: &Rows) -> HashMap<u32, Vec<Sharer>> {
    let mut sharers: HashMap<u32, Vec<Sharer>> = HashMap::new();
    for (&key, row) in rows {
        sharers.entry(key.0).or_default().push(Sharer {
            objects: row.stats.allocated_objects,
            bytes: row.stats.allocated_bytes,
            key,
        });
    }
    sharers
}

/// The live objects the sample holds.
#[derive(Default)]
struct SampledLive {
    /// (objects, bytes) by (class serial, trace serial) of the counted row
    /// that prints as the sample's trace.
    rows: HashMap<(u32, u32), (u64, u64)>,
    /// (objects, bytes) by class serial of those of no row: made by the VM
    /// with no Java frame (while a class loads or links), or by the agent's
    /// tracker.
    elsewhere: HashMap<u32, (u64, u64)>,
    /// (objects, bytes) the sample saw allocated, by row as `rows`.
    seen: HashMap<(u32, u32), (u64, u64)>,
    /// Whether the sample stopped holding every object.
    estimated: bool,
}

/// The live objects the sample holds (`sample_tags`: the live objects of
/// each tag), placed by the rows of `printed`.
fn sampled_live(
    model: &Model,
    live: &LiveSamples,
    sample_tags: &FxHashMap<u64, u64>,
    printed: &HashMap<PrintedTrace, u32>,
) -> SampledLive {
    let mut by_site: HashMap<u32, (u64, u64)> = HashMap::new();
    for (&tag, &count) in sample_tags {
        if let Some((site, bytes, objects)) = live.weigh(tag) {
            let entry = by_site.entry(site).or_default();
            entry.0 += objects * count;
            entry.1 += bytes * count;
        }
    }
    let mut sampled = SampledLive {
        estimated: live.estimated(),
        ..SampledLive::default()
    };
    // A site's class and the trace serial of the counted row it prints
    // as (None: no row).
    let row_of = |site: u32| {
        let key = model.sites.key(site)?;
        let row = printed.get(&printed_trace(model, key.trace_serial));
        Some((key.class_serial, row.copied()))
    };
    for (site, (objects, bytes)) in live.seen_by_site() {
        if let Some((class_serial, Some(trace_serial))) = row_of(site) {
            let row = sampled
                .seen
                .entry((class_serial, trace_serial))
                .or_default();
            row.0 += objects;
            row.1 += bytes;
        }
    }
    for (site, (objects, bytes)) in by_site {
        let held = match row_of(site) {
            Some((class_serial, Some(trace_serial))) => sampled
                .rows
                .entry((class_serial, trace_serial))
                .or_default(),
            Some((class_serial, None)) => sampled.elsewhere.entry(class_serial).or_default(),
            None => continue,
        };
        held.0 += objects;
        held.1 += bytes;
    }
    sampled
}
