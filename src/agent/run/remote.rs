//! What each `net=` front-end command does (read by the listener thread,
//! run/listener.rs). As in HPROF there is no reply: a command's answer is the
//! records it writes into the output, flushed at once.
//!
//! Every command that writes holds the dump lock while it does, so its
//! records never land inside a heap dump being copied (a SIGQUIT dump) and
//! VM death's exit dump follows it. Unlike HPROF's, an unknown command is
//! reported once and ignored (HPROF ended the program with exit status 0),
//! and EXIT ends the program through `System.exit(0)`, the normal exit path
//! (HPROF called C's `exit(0)`, which skipped the VM death dump and closing
//! the output).

use crate::agent::jvm;
use crate::agent::run::engine::{Engine, Run};
use crate::agent::run::engines::Engines;
use crate::agent::run::traces;
use crate::format::commands::{Command, Control, site_flags};
use jvmti_bindings::prelude::*;
use std::collections::HashSet;

/// What a command acts on: the run, its engines, and the dump lock that
/// every command that writes holds.
pub struct Target<'a> {
    pub run: &'a Run,
    pub engines: &'a Engines,
    pub dump_lock: &'a parking_lot::Mutex<()>,
}

/// What a listener remembers between commands: which complaints it made.
#[derive(Default)]
pub struct Session {
    /// Commands reported as needing an option the run lacks.
    not_applicable: HashSet<&'static str>,
    /// An unknown command was reported (later ones are ignored silently).
    unknown_reported: bool,
}

impl Session {
    /// Carries out `command`; false when no command is to be read after it.
    pub fn execute(&mut self, target: &Target<'_>, jni: &JniEnv, command: Command) -> bool {
        let run = target.run;
        let engines = target.engines;
        match command {
            Command::Gc => force_gc(run),
            Command::DumpHeap => match &engines.heap_dump {
                // The heap dump writes its own output, as it is copied.
                Some(heap) => write_section(target, || {
                    if let Err(message) = heap.prepare_dump(run, Some(jni)) {
                        eprintln!("HPROF ERROR: {message}");
                    }
                    Vec::new()
                }),
                None => self.not_applicable("DUMP HEAP", "heap=dump"),
            },
            Command::AllocSites { flags, cutoff } => match &engines.allocation_sites {
                Some(sites) => {
                    if flags & site_flags::GC_FIRST != 0 && !sites.collects_before_each_dump() {
                        force_gc(run);
                    }
                    write_section(target, || {
                        sites.requested_section(run, jni, flags, f64::from(cutoff))
                    });
                }
                None => self.not_applicable("ALLOC SITES", "heap=sites"),
            },
            Command::HeapSummary => write_section(target, || {
                let sites = engines
                    .allocation_sites
                    .as_ref()
                    .map(|s| s.current_sites(run, jni))
                    .unwrap_or_default();
                run.emitter.heap_summary(&sites)
            }),
            Command::Exit => {
                if run.options.verbose {
                    eprintln!("HPROF: received exit event, exiting ...");
                }
                exit_program(jni);
                return false;
            }
            Command::DumpTraces => {
                write_section(target, || run.emitter.pending_traces(&mut run.model.lock()))
            }
            Command::CpuSamples { cutoff } => self.cpu_section(target, jni, f64::from(cutoff)),
            Command::Control(control) => self.control(target, jni, control),
            Command::Eof => return false,
            Command::Unknown { tag } => self.unknown(&format!("cmd {tag}")),
        }
        true
    }

    /// CPU SAMPLES (cpu=samples: the counts go on) or CPU TIME (cpu=times:
    /// the costs start over, having been read out of the Tracker).
    fn cpu_section(&mut self, target: &Target<'_>, jni: &JniEnv, cutoff: f64) {
        let run = target.run;
        let engines = target.engines;
        if engines.cpu_samples.is_none()
            && engines.method_times.is_none()
            && engines.wall_samples.is_none()
        {
            return self.not_applicable("CPU SAMPLES", "cpu=samples, cpu=times or cpu=wall");
        }
        write_section(target, || {
            if let Some(times) = &engines.method_times {
                // Reading the Tracker runs Java code: not under the model lock.
                let _ = times.prepare_dump(run, Some(jni));
            }
            let mut model = run.model.lock();
            let mut out = Vec::new();
            if let Some(samples) = &engines.cpu_samples {
                out.extend(samples.requested_section(run, &mut model, cutoff));
            }
            if let Some(wall) = &engines.wall_samples {
                out.extend(wall.requested_section(run, &mut model, cutoff));
            }
            if let Some(times) = &engines.method_times {
                times.section(run, &mut model, cutoff, &mut out);
            }
            out
        });
    }

    fn control(&mut self, target: &Target<'_>, jni: &JniEnv, control: Control) {
        let run = target.run;
        let engines = target.engines;
        match control {
            Control::AllocationsOn | Control::AllocationsOff => match &engines.allocation_sites {
                Some(sites) => {
                    let on = control == Control::AllocationsOn;
                    if let Err(message) = sites.set_counting(run, jni, on) {
                        eprintln!("HPROF ERROR: {message}");
                    }
                }
                None => self.not_applicable("CONTROL allocation tracking", "heap=sites"),
            },
            Control::SamplingOn { thread } | Control::SamplingOff { thread } => {
                let (samples, wall) = (&engines.cpu_samples, &engines.wall_samples);
                if samples.is_none() && wall.is_none() {
                    return self.not_applicable("CONTROL cpu sampling", "cpu=samples or cpu=wall");
                }
                let set = |serial: Option<u32>, on: bool| {
                    if let Some(samples) = samples {
                        samples.set_sampling(serial, on);
                    }
                    if let Some(wall) = wall {
                        wall.set_sampling(serial, on);
                    }
                };
                let on = matches!(control, Control::SamplingOn { .. });
                // (HPROF's "off" for ID 0 turned nothing off: it cleared
                // its pause flag instead.)
                if thread == 0 {
                    set(None, on);
                } else if let Some(serial) = thread_serial(run, thread) {
                    set(Some(serial), on);
                } else {
                    eprintln!(
                        "HPROF ERROR: CONTROL from the front end: no thread has object ID 0x{thread:x}; ignored"
                    );
                }
            }
            Control::ClearCpu => {
                if let Some(samples) = &engines.cpu_samples {
                    samples.clear();
                }
                if let Some(wall) = &engines.wall_samples {
                    wall.clear();
                }
                if let Some(times) = &engines.method_times {
                    times.clear_costs(run, jni);
                }
            }
            Control::ClearSites => {
                if let Some(sites) = &engines.allocation_sites {
                    sites.clear(run, jni);
                }
            }
            Control::SetDepth(depth) => traces::limit_depth(u32::from(depth)),
            Control::Unknown(code) => self.unknown(&format!("CONTROL sub-command {code}")),
        }
    }

    fn not_applicable(&mut self, command: &'static str, needs: &str) {
        if self.not_applicable.insert(command) {
            eprintln!("HPROF ERROR: {command} from the front end needs {needs}; ignored");
        }
    }

    fn unknown(&mut self, what: &str) {
        if !std::mem::replace(&mut self.unknown_reported, true) {
            eprintln!(
                "HPROF ERROR: failed to recognize {what} from the front end; \
                 ignored (as is any further unknown command)"
            );
        }
    }
}

/// Writes what `make` returns, then flushes, under the dump lock; nothing
/// once the VM is dying (the exit dump is VM death's).
fn write_section(target: &Target<'_>, make: impl FnOnce() -> Vec<u8>) {
    let _dumping = target.dump_lock.lock();
    if !target.run.lifecycle.accepting_events() {
        return;
    }
    let bytes = make();
    target.run.writer.write(bytes);
    target.run.writer.flush();
}

fn force_gc(run: &Run) {
    if !crate::agent::run::collection::may_force_collection(run) {
        return;
    }
    if let Err(error) = run.jvmti.env().force_garbage_collection() {
        eprintln!("HPROF ERROR: ForceGarbageCollection failed ({error:?})");
    }
}

/// The serial of the thread whose THREAD START object identifier has `id`
/// as its low four bytes. HPROF read this identifier in the machine's byte
/// order, so an identifier that matches no thread is tried byte-swapped too.
fn thread_serial(run: &Run, id: u32) -> Option<u32> {
    let model = run.model.lock();
    let find = |id: u32| {
        model
            .threads
            .iter()
            .find(|t| t.object_id as u32 == id)
            .map(|t| t.serial)
    };
    find(id).or_else(|| find(id.swap_bytes()))
}

/// `System.exit(0)` on this thread: shutdown hooks run, VM death writes
/// the exit dump and closes the output. Returns only if it could not be
/// called or threw (a security manager may forbid it).
fn exit_program(jni: &JniEnv) {
    jvm::call_system_exit(jni, 0);
    eprintln!("HPROF ERROR: the exit command from the front end could not end the program");
}
