//! The state of one profiling run and what happens at each lifecycle event:
//! VM init (header, threads and classes so far), thread start/end, class
//! load, dumps (SIGQUIT or VM death) and the final flush.

use super::jvm::{self, JvmtiHandle};
use super::traces::TracePolicy;
use crate::emit::{Emitter, HeaderFacts, Style};
use crate::format::ascii::time::ctime_now;
use crate::format::binary::Version;
use crate::model::Model;
use crate::model::traces::EMPTY_TRACE_SERIAL;
use crate::options::{Format, Options};
use crate::output::OutputWriter;
use jvmti_bindings::prelude::*;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Max heap size from which binary files are 1.0.2 (segmented heap dumps),
/// as in the original agent.
const SEGMENTED_HEAP_THRESHOLD: i64 = 2_000_000_000;

/// Binary identifiers are 4 bytes, like the original agent's.
pub const ID_SIZE: u32 = 4;

/// One profiling run.
pub struct Profiler {
    pub options: Options,
    jvmti: JvmtiHandle,
    traces: TracePolicy,
    emitter: Emitter,
    model: Mutex<Model>,
    writer: OutputWriter,
    /// Set at VM init; events before it are ignored.
    live: AtomicBool,
    /// Set at VM death; events after it are ignored.
    dead: AtomicBool,
    /// Held while a dump is written; a second request meanwhile is dropped.
    dumping: Mutex<()>,
}

impl Profiler {
    /// A run with parsed options, its JVMTI environment and its open output.
    pub fn new(options: Options, jvmti: &Jvmti, writer: OutputWriter) -> Self {
        let style = match options.format {
            Format::Ascii => Style::Ascii,
            Format::Binary => Style::Binary,
        };
        let traces = TracePolicy {
            depth: options.depth,
            per_thread: options.thread,
            line_numbers: options.lineno,
        };
        Self {
            options,
            jvmti: JvmtiHandle::new(jvmti),
            traces,
            emitter: Emitter::new(style, ID_SIZE),
            model: Mutex::new(Model::new()),
            writer,
            live: AtomicBool::new(false),
            dead: AtomicBool::new(false),
            dumping: Mutex::new(()),
        }
    }

    fn accepting_events(&self) -> bool {
        self.live.load(Ordering::Acquire) && !self.dead.load(Ordering::Acquire)
    }

    /// VM init: the file header, the main thread, the classes loaded so far.
    pub fn vm_init(&self, jni: Option<&JniEnv>, main_thread: jni::jthread) {
        let env = self.jvmti.env();
        let version = match (self.emitter.style(), jni.and_then(jvm::max_heap_bytes)) {
            (Style::Binary, Some(max)) if max >= SEGMENTED_HEAP_THRESHOLD => Version::V102,
            _ => Version::V101,
        };
        let mut control_flags = 0;
        if self.options.alloc_tracking() {
            control_flags |= 0x1;
        }
        if self.options.cpu_samples {
            control_flags |= 0x2;
        }
        let facts = HeaderFacts {
            version,
            created: ctime_now(),
            timestamp_ms: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
            control_flags,
            depth: self.options.depth.min(u16::MAX as u32) as u16,
        };
        self.writer.write(self.emitter.file_header(&facts));

        let classes = jvm::loaded_classes(&env);
        let mut guard = self.model.lock();
        let model = &mut *guard;
        for &class in &classes {
            if let Some(signature) = jvm::class_signature(&env, class) {
                let (classes, objects) = (&mut model.classes, &model.objects);
                super::classes::intern_class(
                    &env,
                    classes,
                    objects,
                    class,
                    &signature,
                    EMPTY_TRACE_SERIAL,
                );
            }
            jvm::delete_local(jni, class);
        }
        self.writer.write(self.emitter.class_loads(model));
        drop(guard);

        self.live.store(true, Ordering::Release);
        self.thread_started(main_thread);
        self.writer.flush();
        self.enable_live_events(&env);
    }

    /// Events wanted once the VM is live: only those the options need.
    fn enable_live_events(&self, env: &Jvmti) {
        let mut events = vec![
            jvmti::JVMTI_EVENT_THREAD_START,
            jvmti::JVMTI_EVENT_THREAD_END,
            jvmti::JVMTI_EVENT_DATA_DUMP_REQUEST,
        ];
        if self.emitter.style() == Style::Binary {
            events.push(jvmti::JVMTI_EVENT_CLASS_LOAD);
        }
        if let Err(error) = env.enable_events_global(&events) {
            eprintln!(
                "HPROF ERROR: Unable to enable JVMTI events ({error:?}); some output may be missing"
            );
        }
    }

    /// The serial of `thread`, registering it (without a THREAD START) if new.
    fn thread_serial(&self, env: &Jvmti, model: &mut Model, thread: jni::jthread) -> (u32, bool) {
        let tag = jvm::tag_of(env, thread);
        if let Some(serial) = model.threads.serial_of_object(tag) {
            return (serial, false);
        }
        let facts = jvm::thread_facts(env, thread);
        let object_id = model.objects.next();
        let _ = jvm::set_tag(env, thread, object_id);
        let serial = model.threads.add(
            object_id,
            facts.name,
            facts.group,
            facts.parent_group,
            EMPTY_TRACE_SERIAL,
        );
        (serial, true)
    }

    /// ThreadStart (and the main thread at VM init): THREAD START once per thread.
    pub fn thread_started(&self, thread: jni::jthread) {
        if !self.accepting_events() {
            return;
        }
        let env = self.jvmti.env();
        let frames = jvm::stack_frames(&env, thread, self.traces.depth);
        let mut model = self.model.lock();
        let (serial, new) = self.thread_serial(&env, &mut model, thread);
        if !new {
            return;
        }
        let trace = self.traces.intern(&env, &mut model, &frames, serial);
        model.threads.set_trace(serial, trace);
        let bytes = self.emitter.thread_start(&mut model, serial);
        drop(model);
        self.writer.write(bytes);
    }

    /// ThreadEnd: THREAD END.
    pub fn thread_ended(&self, thread: jni::jthread) {
        if !self.accepting_events() {
            return;
        }
        let env = self.jvmti.env();
        let mut model = self.model.lock();
        let (serial, _) = self.thread_serial(&env, &mut model, thread);
        if model.threads.end(serial) {
            let bytes = self.emitter.thread_end(serial);
            drop(model);
            self.writer.write(bytes);
        }
    }

    /// ClassLoad: the class gets a serial, and in binary a LOAD CLASS record
    /// with the loading thread's trace.
    pub fn class_loaded(&self, thread: jni::jthread, class: jni::jclass) {
        if !self.accepting_events() || self.emitter.style() != Style::Binary {
            return;
        }
        let env = self.jvmti.env();
        let Some(signature) = jvm::class_signature(&env, class) else {
            return;
        };
        let frames = jvm::stack_frames(&env, thread, self.traces.depth);
        let mut guard = self.model.lock();
        let model = &mut *guard;
        let (thread_serial, _) = self.thread_serial(&env, model, thread);
        let trace = self.traces.intern(&env, model, &frames, thread_serial);
        let (classes, objects) = (&mut model.classes, &model.objects);
        super::classes::intern_class(&env, classes, objects, class, &signature, trace);
        let bytes = self.emitter.class_loads(model);
        drop(guard);
        self.writer.write(bytes);
    }

    /// A full dump (SIGQUIT or VM death): every section the enabled
    /// collectors have, then a flush. A request during a dump is dropped.
    pub fn dump(&self) {
        let Some(_guard) = self.dumping.try_lock() else {
            return;
        };
        let mut model = self.model.lock();
        let mut bytes = self.emitter.class_loads(&mut model);
        bytes.extend(self.emitter.unprinted_traces(&mut model));
        drop(model);
        self.writer.write(bytes);
        self.writer.flush();
    }

    /// SIGQUIT / DataDumpRequest.
    pub fn data_dump_request(&self) {
        if self.accepting_events() {
            self.dump();
        }
    }

    /// VM death: the exit dump (`doe=y`), then everything is flushed and closed.
    pub fn vm_death(&self) {
        if self.dead.swap(true, Ordering::AcqRel) {
            return;
        }
        if self.options.doe && self.live.load(Ordering::Acquire) {
            self.dump();
        }
        // Wait for a SIGQUIT dump still being written before closing.
        let _guard = self.dumping.lock();
        self.writer.close();
    }
}
