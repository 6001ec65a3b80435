//! Per-thread CPU timers: how the cpu=samples collector knows which threads
//! really ran. Each profiled thread gets a POSIX timer on its own CPU-time
//! clock; every `interval` of CPU the thread burns, the kernel sends it the
//! sampling signal, and the handler takes its stack (or adds one to the
//! thread's slot). Threads that sleep, wait, park or block in I/O burn no
//! CPU, get no signal and are never sampled; idle threads cost nothing per
//! tick.
//!
//! The sampling signal is a real-time signal nobody handles when the agent
//! loads (the highest free one, [`install_handler`]), not SIGPROF: a program
//! may handle SIGPROF itself (`sun.misc.Signal.handle(new Signal("PROF"))`
//! replaces any handler installed before it), and so may another profiler
//! (JDK 25's JFR CPU-time sampler). Java code cannot name a real-time signal.
//!
//! A thread's timer is made on the thread itself at its ThreadStart; a
//! thread already running when the agent is attached to a live JVM passed
//! there before, and gets one made for it by the attaching thread: Linux
//! lets a process make a timer on the CPU clock of any of its threads and
//! have it signal that thread ([`start_for_thread`], with the thread's
//! kernel id and JNIEnv read out of HotSpot by `jvm/native_thread.rs`).
//! Either way the timer is kept by the thread's kernel id until its
//! ThreadEnd, where the thread takes it back ([`take_current`]).
//!
//! Linux only (timer_create with SIGEV_THREAD_ID). The agent's unsafe calls
//! to the operating system (signals, timers, the monotonic clock) are here.

use crate::agent::jvm::native_thread::current_tid;
use crate::agent::modes::cpu_samples::async_trace::{self, MAX_SLOTS};
use parking_lot::Mutex;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// CPU intervals each slot's thread consumed since the sampler last looked.
/// Written by the signal handler, so it must be plain atomics in static memory.
static PENDING: [AtomicU32; MAX_SLOTS] = [const { AtomicU32::new(0) }; MAX_SLOTS];
/// One past the highest slot ever used, so the sampler scans no further.
static HIGH_WATER: AtomicUsize = AtomicUsize::new(0);
/// The signal our handler is installed on (0 until it is).
static SAMPLING_SIGNAL: AtomicI32 = AtomicI32::new(0);

/// Set in a timer's value beside its slot: the thread's one look at its
/// stack before its first sample is due (see [`start_for_current_thread`]).
const PEEK: usize = 1 << 32;

/// How long before a thread's first sample is due its stack is looked at:
/// the kernel signals a CPU timer at its scheduler tick after it expired
/// (4 ms at 250 Hz), so a thread may end with a sample due and not yet
/// signalled, its stack gone; the look, a tick earlier, gives that sample
/// the stack the thread had then.
const PEEK_LEAD_NS: u64 = 4_000_000;

/// Each slot's running timers (its periodic one, then its look), as the
/// integers the kernel handles are, so that a profile stopped while the
/// JVM runs on (`hprof-rs attach PID stop`) can disarm the timers of
/// threads that keep running: a timer belongs to the process, not to the
/// thread that made it. 0 for none.
static TIMER_IDS: [[AtomicUsize; 2]; MAX_SLOTS] =
    [const { [AtomicUsize::new(0), AtomicUsize::new(0)] }; MAX_SLOTS];

/// Free slot numbers.
static FREE_SLOTS: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// Each timed thread's timer, by the thread's kernel id, from its start
/// ([`keep`]) to its ThreadEnd ([`take_current`]). Static, as the timers
/// are the process's: a profile stopped while the JVM runs on leaves its
/// threads' timers disarmed here, and a thread still running at the next
/// attach has its old timer deleted as it gets a new one. (An entry whose
/// thread ended while no profile ran goes when its id is reused.)
static KEPT: Mutex<BTreeMap<libc::pid_t, CpuTimer>> = Mutex::new(BTreeMap::new());

thread_local! {
    /// The calling thread's slot as last found (`usize::MAX` for none) and
    /// its kernel id (0 until known), for [`note_mounted`].
    static OWN_SLOT: Cell<(usize, libc::pid_t)> = const { Cell::new((usize::MAX, 0)) };
}

/// The start of a timer's siginfo on Linux (x86_64 and aarch64): the
/// `_timer` member of the union begins at offset 16.
#[repr(C)]
struct TimerSignalInfo {
    signo: libc::c_int,
    errno: libc::c_int,
    code: libc::c_int,
    _pad: libc::c_int,
    timer_id: libc::c_int,
    overrun: libc::c_int,
    value: usize,
}

/// The sampling signal's handler: async-signal-safe. The interrupted
/// thread's stack is walked into a preallocated record
/// (`modes/cpu_samples/async_trace.rs`); when it cannot be, the handler only
/// adds to the slot's atomic count, and the sampler takes the stack through
/// JVMTI. A look ([`PEEK`]) is a walk that counts no sample.
extern "C" fn on_cpu_tick(
    _signal: libc::c_int,
    info: *mut libc::siginfo_t,
    context: *mut libc::c_void,
) {
    if info.is_null() {
        return;
    }
    // SAFETY: the kernel passes a valid siginfo; for a timer signal
    // (si_code SI_TIMER) its layout starts as TimerSignalInfo.
    let info = unsafe { &*(info as *const TimerSignalInfo) };
    if info.code != libc::SI_TIMER {
        return;
    }
    let slot = info.value & !PEEK;
    if info.value & PEEK != 0 {
        async_trace::capture(slot, 0, context);
        return;
    }
    let weight = 1 + info.overrun.max(0) as u32;
    if async_trace::capture(slot, weight, context) {
        return;
    }
    if let Some(pending) = PENDING.get(slot) {
        pending.fetch_add(weight, Ordering::Relaxed);
    }
}

/// Installs the handler on the highest real-time signal that nobody
/// handles (nor ignores) yet, and returns it. The JVM and the C library
/// keep their own (the C library's are below SIGRTMIN; in JDK 11 to 25
/// signal 62 is taken before the agent loads); none free is an error, and
/// nothing is changed.
pub fn install_handler() -> Result<i32, String> {
    let installed = SAMPLING_SIGNAL.load(Ordering::Acquire);
    if installed != 0 {
        return Ok(installed);
    }
    let signal = (libc::SIGRTMIN()..=libc::SIGRTMAX())
        .rev()
        .find(|&signal| is_unhandled(signal))
        .ok_or("every real-time signal is already handled (no signal to sample with)")?;
    // SAFETY: the new disposition points at a handler that only touches
    // static atomics and preallocated records.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_cpu_tick as *const () as usize;
        action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        if libc::sigaction(signal, &action, std::ptr::null_mut()) != 0 {
            return Err(format!("cannot install the handler of signal {signal}"));
        }
    }
    SAMPLING_SIGNAL.store(signal, Ordering::Release);
    Ok(signal)
}

/// True when `signal` has its default disposition: no handler, not ignored.
fn is_unhandled(signal: libc::c_int) -> bool {
    // SAFETY: sigaction with a null new action only reads the current one
    // into a zeroed struct.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &mut current) == 0
            && current.sa_sigaction == libc::SIG_DFL
    }
}

/// A running CPU timer of a thread, and its one-shot look.
pub struct CpuTimer {
    pub slot: usize,
    /// The kernel id of the thread it measures and signals.
    tid: libc::pid_t,
    timer: libc::timer_t,
    peek: Option<libc::timer_t>,
}

// SAFETY: a timer_t is a kernel handle (an integer in a pointer); it may be
// deleted from any thread.
unsafe impl Send for CpuTimer {}

fn take_slot() -> Option<usize> {
    if let Some(slot) = FREE_SLOTS.lock().pop() {
        return Some(slot);
    }
    let slot = HIGH_WATER.fetch_add(1, Ordering::AcqRel);
    if slot < MAX_SLOTS {
        Some(slot)
    } else {
        HIGH_WATER.store(MAX_SLOTS, Ordering::Release);
        None
    }
}

/// Starts a timer on the calling thread's CPU clock that signals this thread
/// every `interval_ms` of CPU it consumes, and a one-shot look at its stack
/// a kernel tick before its first sample is due. The thread's JNIEnv (for
/// the stack walk in the handler) and serial are given.
pub fn start_for_current_thread(
    interval_ms: u32,
    jni_env: *mut libc::c_void,
    serial: u32,
) -> Option<CpuTimer> {
    start_for_thread(current_tid(), interval_ms, jni_env, serial, || true)
}

/// [`start_for_current_thread`] for any thread of the process, by its
/// kernel id `tid`. The timers are made, then `still_running` is asked
/// before they are armed: true says `tid` was the thread's id all along
/// (not a number read from a thread that ended meanwhile, which the kernel
/// may have given to another), so the timers, which the kernel binds to the
/// thread the id named when they were made, are that thread's. False:
/// nothing is started.
pub fn start_for_thread(
    tid: libc::pid_t,
    interval_ms: u32,
    jni_env: *mut libc::c_void,
    serial: u32,
    still_running: impl FnOnce() -> bool,
) -> Option<CpuTimer> {
    let signal = SAMPLING_SIGNAL.load(Ordering::Acquire);
    if signal == 0 || tid <= 0 {
        return None;
    }
    let slot = take_slot()?;
    PENDING[slot].store(0, Ordering::Relaxed);
    async_trace::own_slot(slot, tid, jni_env, serial);
    let made =
        cpu_timer(signal, tid, slot).map(|timer| (timer, cpu_timer(signal, tid, slot | PEEK)));
    let period_ns = u64::from(interval_ms) * 1_000_000;
    // The first tick comes after a random part of the period, so that a
    // thread burning c < interval of CPU in its whole life is sampled with
    // probability c/interval: over many short threads the samples add up
    // to the CPU they used (with a full first period, none of them would
    // ever be sampled).
    let first_ns = 1 + random_below(period_ns);
    let armed = match made {
        Some((timer, peek)) if still_running() && arm(timer, first_ns, period_ns) => {
            // (Half way to the first sample when it is due within a tick.)
            let peek_ns = match first_ns.checked_sub(PEEK_LEAD_NS) {
                Some(early) if early > 0 => early,
                _ => (first_ns / 2).max(1),
            };
            // (A look that cannot be armed is left out.)
            let peek = peek.filter(|&peek| {
                let armed = arm(peek, peek_ns, 0);
                if !armed {
                    delete(peek);
                }
                armed
            });
            Some(CpuTimer {
                slot,
                tid,
                timer,
                peek,
            })
        }
        Some((timer, peek)) => {
            delete(timer);
            if let Some(peek) = peek {
                delete(peek);
            }
            None
        }
        None => None,
    };
    let Some(armed) = armed else {
        async_trace::disown_slot(slot);
        FREE_SLOTS.lock().push(slot);
        return None;
    };
    TIMER_IDS[slot][0].store(armed.timer as usize, Ordering::Release);
    TIMER_IDS[slot][1].store(armed.peek.map_or(0, |p| p as usize), Ordering::Release);
    Some(armed)
}

/// The clock id of the CPU clock of the thread `tid` of this process: the
/// kernel's `MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)`, the clock glibc's
/// `pthread_getcpuclockid` gives (`CLOCK_THREAD_CPUTIME_ID` is that of tid
/// 0, the calling thread).
fn thread_cpu_clock(tid: libc::pid_t) -> libc::clockid_t {
    const CPUCLOCK_PERTHREAD: libc::clockid_t = 4;
    const CPUCLOCK_SCHED: libc::clockid_t = 2;
    ((!tid) << 3) | CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED
}

/// A disarmed timer on the CPU clock of the thread `tid` that, once armed,
/// sends that thread `signal` with `value`. None when `tid` is no thread of
/// this process (any more).
fn cpu_timer(signal: i32, tid: libc::pid_t, value: usize) -> Option<libc::timer_t> {
    // SAFETY: plain libc calls with valid out-pointers; the kernel checks
    // that `tid` is a thread of this process, for the clock and for the
    // signal, and binds the timer to that thread.
    unsafe {
        let mut event: libc::sigevent = std::mem::zeroed();
        event.sigev_notify = libc::SIGEV_THREAD_ID;
        event.sigev_signo = signal;
        event.sigev_value = libc::sigval {
            sival_ptr: value as *mut libc::c_void,
        };
        event.sigev_notify_thread_id = tid;
        let mut timer: libc::timer_t = std::ptr::null_mut();
        (libc::timer_create(thread_cpu_clock(tid), &mut event, &mut timer) == 0).then_some(timer)
    }
}

/// Arms `timer` to expire after `first_ns` of CPU, then every `period_ns`
/// (0: once). False when it cannot be.
fn arm(timer: libc::timer_t, first_ns: u64, period_ns: u64) -> bool {
    let spec = libc::itimerspec {
        it_interval: timespec_of(period_ns),
        it_value: timespec_of(first_ns),
    };
    // SAFETY: a live timer of timer_create; `spec` is a valid itimerspec.
    unsafe { libc::timer_settime(timer, 0, &spec, std::ptr::null_mut()) == 0 }
}

/// Deletes a timer [`start_for_thread`] made and handed out to no one.
fn delete(timer: libc::timer_t) {
    // SAFETY: a timer of timer_create, deleted once: here.
    unsafe { libc::timer_delete(timer) };
}

/// Keeps `timer` as its thread's until the thread takes it back at its end
/// ([`take_current`]). Returns the timer kept for the same kernel id
/// before, if any: one of an earlier profile (the thread still runs), or of
/// a thread that ended while no profile ran and whose id is reused; the
/// caller stops it.
pub fn keep(timer: CpuTimer) -> Option<CpuTimer> {
    KEPT.lock().insert(timer.tid, timer)
}

/// At ThreadEnd, on the ending thread: its timer, if it has one.
pub fn take_current() -> Option<CpuTimer> {
    KEPT.lock().remove(&current_tid())
}

/// On a carrier thread, as a virtual thread mounts (`key`) or unmounts (0):
/// the samples its timer takes from now on are that virtual thread's. The
/// thread's slot is remembered on the thread, and looked up again when it
/// no longer leads to the thread (a timer made for the thread at an attach
/// was made on another thread, which could not tell it).
pub fn note_mounted(key: u64) {
    let slot = OWN_SLOT.try_with(|own| {
        let (slot, tid) = own.get();
        let tid = if tid == 0 { current_tid() } else { tid };
        if slot < MAX_SLOTS && async_trace::owner_tid(slot) == tid {
            return slot;
        }
        let found = KEPT.lock().get(&tid).map_or(usize::MAX, |timer| timer.slot);
        own.set((found, tid));
        found
    });
    if let Ok(slot) = slot {
        async_trace::set_mounted(slot, key);
    }
}

impl CpuTimer {
    /// Stops the timer and frees its slot. Returns the CPU intervals the
    /// thread consumed since the sampler last looked.
    pub fn stop(self) -> u32 {
        // The kernel checks CPU-time timers at its scheduler tick (every 1
        // to 4 ms), so an interval that ended in the thread's last moments
        // may not have been signalled yet. It shows as a timer due in 1 ns
        // (the kernel's way of saying "expired, not yet fired"); without
        // counting it, short threads lose a sample in about a tick per
        // interval (measured: 2000 threads of 8 ms got 70% of their samples).
        let mut state: libc::itimerspec = libc::itimerspec {
            it_interval: timespec_of(0),
            it_value: timespec_of(0),
        };
        // SAFETY: the timers came from timer_create and are deleted once
        // (self is consumed); `state` is a valid out-pointer.
        TIMER_IDS[self.slot][0].store(0, Ordering::Release);
        TIMER_IDS[self.slot][1].store(0, Ordering::Release);
        let overdue = unsafe {
            let read = libc::timer_gettime(self.timer, &mut state) == 0;
            libc::timer_delete(self.timer);
            if let Some(peek) = self.peek {
                libc::timer_delete(peek);
            }
            async_trace::disown_slot(self.slot);
            read && state.it_value.tv_sec == 0 && state.it_value.tv_nsec == 1
        };
        let pending = PENDING[self.slot].swap(0, Ordering::Relaxed) + u32::from(overdue);
        FREE_SLOTS.lock().push(self.slot);
        pending
    }
}

/// Disarms the timers of `slot`'s thread: it is sent no more sampling
/// signals. The timers themselves stay until the thread ends, or a later
/// attach gives it new ones (their [`CpuTimer::stop`] deletes them, once). The caller holds the lock under
/// which the thread's end stops its timer, so that the handles are live.
pub fn disarm(slot: usize) {
    let Some(ids) = TIMER_IDS.get(slot) else {
        return;
    };
    let off = libc::itimerspec {
        it_interval: timespec_of(0),
        it_value: timespec_of(0),
    };
    for id in ids {
        let timer = id.load(Ordering::Acquire);
        if timer != 0 {
            // SAFETY: a handle timer_create returned, not deleted yet (the
            // caller's promise); a zero value disarms it.
            unsafe { libc::timer_settime(timer as libc::timer_t, 0, &off, std::ptr::null_mut()) };
        }
    }
    PENDING[slot].store(0, Ordering::Relaxed);
}

fn timespec_of(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

/// A number in `0..bound` (0 for a bound of 0), from a per-process
/// xorshift generator seeded by the clock: phases need spread, not secrecy.
pub fn random_below(bound: u64) -> u64 {
    static STATE: AtomicU64 = AtomicU64::new(0);
    let mut x = STATE.load(Ordering::Relaxed);
    if x == 0 {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0x9E37_79B9_7F4A_7C15, |d| d.as_nanos() as u64);
        x = now | 1;
    }
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    STATE.store(x, Ordering::Relaxed);
    if bound == 0 { 0 } else { x % bound }
}

/// Takes the pending CPU intervals of every slot: (slot, intervals) for
/// each slot whose thread ran since the last call.
pub fn take_pending() -> Vec<(usize, u32)> {
    let high = HIGH_WATER.load(Ordering::Acquire).min(MAX_SLOTS);
    PENDING[..high]
        .iter()
        .enumerate()
        // A plain load first: most slots are idle, and a swap on each would
        // cost a locked instruction per thread per look.
        .filter(|(_, pending)| pending.load(Ordering::Relaxed) != 0)
        .filter_map(|(slot, pending)| match pending.swap(0, Ordering::Relaxed) {
            0 => None,
            n => Some((slot, n)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_thread_collects_intervals_and_an_idle_one_does_not() {
        install_handler().expect("a real-time signal is free in tests");
        let busy = std::thread::spawn(|| {
            let timer = start_for_current_thread(1, std::ptr::null_mut(), 0).expect("timer");
            // Spin until 20 ticks of 1 ms CPU arrive (or give up after 10 s
            // of wall time, on a machine too busy to give this thread CPU).
            let start = std::time::Instant::now();
            let mut x = 0u64;
            while PENDING[timer.slot].load(Ordering::Relaxed) < 20
                && start.elapsed() < std::time::Duration::from_secs(10)
            {
                x = x.wrapping_mul(31).wrapping_add(7);
                std::hint::black_box(x);
            }
            let pending = PENDING[timer.slot].load(Ordering::Relaxed);
            timer.stop();
            pending
        });
        let idle = std::thread::spawn(|| {
            let timer = start_for_current_thread(1, std::ptr::null_mut(), 0).expect("timer");
            std::thread::sleep(std::time::Duration::from_millis(60));
            let pending = PENDING[timer.slot].load(Ordering::Relaxed);
            timer.stop();
            pending
        });
        let busy = busy.join().unwrap();
        let idle = idle.join().unwrap();
        assert!(
            busy >= 20,
            "a thread busy for 60 ms got {busy} ticks of 1 ms"
        );
        assert!(idle <= 1, "a sleeping thread got {idle} ticks");
    }
}
