/*
 * The fault guard around AsyncGetCallTrace, as production samplers have
 * one: the walk runs inside the SIGPROF handler on a thread stopped at any
 * instruction, and HotSpot's own comments (prims/forte.cpp) admit that a
 * frame it cannot decipher may make it read a bad address. A SIGSEGV or
 * SIGBUS raised *during a guarded walk on the same thread* jumps back to
 * the guard, which reports the walk as faulted; every other fault goes on
 * to the handler that was installed before ours (HotSpot's, which uses
 * SIGSEGV for implicit null checks and safepoint polls), with the same
 * arguments, so the JVM sees exactly what it would have seen.
 *
 * Written in C because sigsetjmp/siglongjmp cannot be used from Rust (a
 * function that returns twice). Everything here is async-signal-safe: no
 * allocation, no lock, no thread-local storage (whose first use in a
 * dlopen'd library may allocate); the walking threads are found by their
 * kernel thread id in a fixed table.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <ucontext.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Walks that can be guarded at once; one more waits for nothing: it is
 * refused, and the sample is taken the slower way (see modes/cpu_samples/async_trace.rs). */
#define GUARDS 64

struct guard {
    _Atomic long tid;            /* 0: free */
    sigjmp_buf *_Atomic jump;
};

static struct guard guards[GUARDS];
/* Guarded walks under way: a fault with none under way goes straight on. */
static atomic_int walking;
static atomic_int installed;
static struct sigaction previous_segv;
static struct sigaction previous_bus;

static long current_tid(void) { return (long)syscall(SYS_gettid); }

/* Hands a fault that is not ours to the handler installed before. */
static void chain(int sig, siginfo_t *info, void *ucontext) {
    struct sigaction *previous = sig == SIGBUS ? &previous_bus : &previous_segv;
    if (previous->sa_flags & SA_SIGINFO) {
        if (previous->sa_sigaction != NULL) {
            previous->sa_sigaction(sig, info, ucontext);
        }
        return;
    }
    if (previous->sa_handler == SIG_IGN) {
        return;
    }
    if (previous->sa_handler == SIG_DFL) {
        /* The faulting instruction runs again on return and, with the
         * default action back, ends the process as it would have. */
        struct sigaction fallback;
        sigemptyset(&fallback.sa_mask);
        fallback.sa_flags = 0;
        fallback.sa_handler = SIG_DFL;
        sigaction(sig, &fallback, NULL);
        return;
    }
    previous->sa_handler(sig);
}

static void on_fault(int sig, siginfo_t *info, void *ucontext) {
    if (atomic_load_explicit(&walking, memory_order_acquire) > 0) {
        long tid = current_tid();
        for (int i = 0; i < GUARDS; i++) {
            if (atomic_load_explicit(&guards[i].tid, memory_order_acquire) == tid) {
                sigjmp_buf *jump = atomic_load_explicit(&guards[i].jump, memory_order_acquire);
                if (jump != NULL) {
                    /* The guard saved no signal mask (that would cost a
                     * system call per sample): unblock the fault signals
                     * here, leaving the SIGPROF handler's mask. */
                    sigset_t faults;
                    sigemptyset(&faults);
                    sigaddset(&faults, SIGSEGV);
                    sigaddset(&faults, SIGBUS);
                    pthread_sigmask(SIG_UNBLOCK, &faults, NULL);
                    siglongjmp(*jump, 1);
                }
            }
        }
    }
    chain(sig, info, ucontext);
}

static int install_one(int sig, struct sigaction *previous) {
    struct sigaction current;
    if (sigaction(sig, NULL, &current) != 0) {
        return -1;
    }
    struct sigaction ours = current;
    ours.sa_sigaction = on_fault;
    ours.sa_flags = (current.sa_flags | SA_SIGINFO) & ~SA_RESETHAND;
    *previous = current;
    return sigaction(sig, &ours, NULL);
}

/* Installs the guard's SIGSEGV and SIGBUS handlers in front of the ones
 * in place (the JVM's). Call once, after the JVM installed its own.
 * Returns 0 on success. */
int hprof_fault_guard_install(void) {
    if (atomic_load(&installed)) {
        return 0;
    }
    if (install_one(SIGSEGV, &previous_segv) != 0) {
        return -1;
    }
    if (install_one(SIGBUS, &previous_bus) != 0) {
        sigaction(SIGSEGV, &previous_segv, NULL);
        return -1;
    }
    atomic_store(&installed, 1);
    return 0;
}

/* Calls body(arg) under the guard. Returns 0 when it returned, 1 when it
 * faulted, 2 when it could not be guarded (not installed, or GUARDS walks
 * under way) and did not run. */
static int guarded(void (*body)(void *), void *arg) {
    if (!atomic_load_explicit(&installed, memory_order_acquire)) {
        return 2;
    }
    long tid = current_tid();
    volatile int index = -1;
    for (int i = 0; i < GUARDS; i++) {
        long expected = 0;
        if (atomic_compare_exchange_strong(&guards[i].tid, &expected, tid)) {
            index = i;
            break;
        }
    }
    if (index < 0) {
        return 2;
    }
    sigjmp_buf jump;
    volatile int result = 0;
    atomic_store_explicit(&guards[index].jump, &jump, memory_order_release);
    atomic_fetch_add_explicit(&walking, 1, memory_order_acq_rel);
    if (sigsetjmp(jump, 0) == 0) {
        body(arg);
    } else {
        result = 1;
    }
    atomic_fetch_sub_explicit(&walking, 1, memory_order_acq_rel);
    atomic_store_explicit(&guards[index].jump, NULL, memory_order_release);
    atomic_store_explicit(&guards[index].tid, 0, memory_order_release);
    return result;
}

/* ASGCT_CallTrace's layout (prims/forte.cpp). */
struct call_trace {
    void *env;
    int num_frames;
    void *frames;
};

typedef void (*hprof_walk_fn)(struct call_trace *trace, int depth, void *ucontext);

struct walk {
    hprof_walk_fn walk;
    struct call_trace *trace;
    int depth;
    void *ucontext;
};

/* AsyncGetCallTrace's codes for a thread in Java code at a point it
 * cannot decipher (ticks_unknown_Java, ticks_not_walkable_Java). */
#define UNKNOWN_JAVA (-5)
#define NOT_WALKABLE_JAVA (-6)

/* How far above the stack pointer a stub's frame pointer may be. */
#define STUB_FRAME_MAX (64 * 1024)

/* The interrupted thread's registers one frame out of a stub, into `out`:
 * AsyncGetCallTrace cannot walk from a pc inside one of HotSpot's stubs
 * (System.arraycopy's copy loops, for one), where a CPU-heavy intrinsic
 * spends its time, so the stub's frame is stepped over as a profiler's
 * unwinder would: through its frame pointer when the stub made a frame
 * (HotSpot's stubs begin with `enter`: push the frame pointer, point it
 * at the stack pointer), else as a leaf (the return address on top of
 * the stack). The walk from there names the Java caller at the call.
 * Reads the stack, so it runs under the guard. Returns 0 if it cannot. */
static int step_out_of_stub(const ucontext_t *in, ucontext_t *out) {
    *out = *in;
#if defined(__x86_64__)
    greg_t *regs = out->uc_mcontext.gregs;
    uintptr_t sp = (uintptr_t)regs[REG_RSP];
    uintptr_t fp = (uintptr_t)regs[REG_RBP];
    if (fp >= sp && fp - sp < STUB_FRAME_MAX && fp % sizeof(uintptr_t) == 0) {
        regs[REG_RIP] = (greg_t) * (uintptr_t *)(fp + sizeof(uintptr_t));
        regs[REG_RSP] = (greg_t)(fp + 2 * sizeof(uintptr_t));
        regs[REG_RBP] = (greg_t) * (uintptr_t *)fp;
    } else {
        regs[REG_RIP] = (greg_t) * (uintptr_t *)sp;
        regs[REG_RSP] = (greg_t)(sp + sizeof(uintptr_t));
    }
    return 1;
#elif defined(__aarch64__)
    uintptr_t sp = (uintptr_t)out->uc_mcontext.sp;
    uintptr_t fp = (uintptr_t)out->uc_mcontext.regs[29];
    if (fp >= sp && fp - sp < STUB_FRAME_MAX && fp % sizeof(uintptr_t) == 0) {
        out->uc_mcontext.pc = *(uintptr_t *)(fp + sizeof(uintptr_t));
        out->uc_mcontext.sp = fp + 2 * sizeof(uintptr_t);
        out->uc_mcontext.regs[29] = *(uintptr_t *)fp;
    } else {
        out->uc_mcontext.pc = out->uc_mcontext.regs[30];
    }
    return 1;
#else
    (void)in;
    return 0;
#endif
}

static void walk_with_recovery(void *arg) {
    struct walk *w = arg;
    w->walk(w->trace, w->depth, w->ucontext);
    int n = w->trace->num_frames;
    if ((n == UNKNOWN_JAVA || n == NOT_WALKABLE_JAVA) && w->ucontext != NULL) {
        ucontext_t outside;
        if (step_out_of_stub((const ucontext_t *)w->ucontext, &outside)) {
            w->walk(w->trace, w->depth, &outside);
            if (w->trace->num_frames <= 0) {
                /* The first answer says more than a failed second try. */
                w->trace->num_frames = n;
            }
        }
    }
}

/* Walks the interrupted thread's stack with `walk` (AsyncGetCallTrace),
 * under the guard, stepping out of a stub when the walk cannot start
 * inside one. Returns 0 when the walk returned (trace->num_frames says
 * how it went), 1 when it faulted (trace's contents are then garbage), 2
 * when it could not be guarded and did not run. */
int hprof_walk_stack(hprof_walk_fn walk, struct call_trace *trace, int depth, void *ucontext) {
    struct walk w = {walk, trace, depth, ucontext};
    return guarded(walk_with_recovery, &w);
}

/* For the tests: reads `address` under the guard (1 if it faulted). */
static void read_word(void *address) {
    volatile long *p = (volatile long *)address;
    (void)*p;
}

int hprof_guarded_read(void *address) {
    return guarded(read_word, address);
}

static void *volatile unmapped = (void *)8;

/* A stack walk that always faults, with AsyncGetCallTrace's signature
 * (the agent's X=0x20000, a test of the guard inside a real JVM). */
void hprof_faulting_walk(struct call_trace *trace, int depth, void *ucontext) {
    (void)trace;
    (void)depth;
    (void)ucontext;
    read_word(unmapped);
}
