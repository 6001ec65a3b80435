/*
 * The class the byte code injected by hprof-rs (src/bci, cpu=times and
 * cpu=old) calls: HPROF's com.sun.demo.jvmti.hprof.Tracker, with the
 * timing kept here, in Java, so that a timed call costs no JNI transition.
 *
 * Every instrumented method starts with
 *     ldc <class number>; <push method number>; invokestatic hprof_rs/Tracker.CallSite(II)V
 * and runs
 *     ldc <class number>; <push method number>; invokestatic hprof_rs/Tracker.ReturnSite(II)V
 * before each return instruction and, when the method is left by an
 * exception, in a catch-all handler that then rethrows it (constructors
 * excepted). A leaf, a method with no invoke instruction, starts with
 *     invokestatic hprof_rs/Tracker.leafStart()J; lstore <its own local>
 * instead and runs
 *     ldc <class number>; <push method number>; lload <that local>;
 *     invokestatic hprof_rs/Tracker.LeafSite(IIJ)V
 * where the others run ReturnSite: nothing timed can start inside a leaf,
 * so its whole call is counted at its end, without a place on the shadow
 * stack. The hooks do nothing until the agent engages the tracker. A call
 * whose exit was not seen (a constructor left by an exception, a frame
 * running code from before a retransformation) ends when a caller below it
 * exits.
 *
 * Traces (the method and up to depth-1 callers, method keys (class number
 * << 32 | method number)) are nodes of one tree shared by all threads: a
 * node is (method, caller node), so a trace costs the same few bytes
 * whatever the depth. Each thread keeps a shadow stack of the calls in
 * progress and, per trace it ran, the costs of its completed calls. A
 * call's trace is found once, on entry, from its caller's trace through a
 * per-thread memo table; an exit only adds to that trace's counters.
 * Counters only grow; drain() reports what grew since the previous drain,
 * so the owner thread and the agent never write the same memory.
 *
 * A finished thread's counts are folded into totals kept per thread serial
 * and its state is dropped: by ended(serial) on the ending thread (the
 * agent's ThreadEnd), or, for threads the agent never sees end (virtual
 * threads), by a sweep of dead threads whenever the number of threads kept
 * has doubled since the previous sweep.
 *
 * The tracker never throws into the program: a StackOverflowError (which
 * can strike at any call, the program being deep already) is swallowed,
 * and the state only changes in call-free steps after every call that can
 * fail has returned, so it stays consistent; any other error stops the
 * timing of that thread, and drain() reports the first one to the agent.
 *
 * What the agent must do:
 *  1. At VMInit, define this class in the boot loader (JNI DefineClass,
 *     null loader, the bytes of hprof_rs::bci::TRACKER_CLASS_FILE): no file
 *     is written that another user of the machine could plant or swap.
 *  2. Instrument nothing before this class is defined, and never this
 *     class itself.
 *  3. At VMInit, set `depth` (trace frames) and start keeping `now`
 *     current (SetStaticLongField from an agent thread, every millisecond
 *     or so), then set `engaged` to non-zero
 *     (SetStaticIntField; private fields are fine for JNI). Set `engaged`
 *     back to 0 at the start of VMDeath. When the injected code calls
 *     CallCountInlined, call prime() once engaged (at VMInit: before the
 *     program's code runs).
 *  4. On JVMTI ThreadEnd, call ended(serial) on the ending thread.
 *  5. At each dump call drain(), which returns
 *     {Thread[] threads, long[] nodes, long[] data, String failure}:
 *     nodes is the first new node's number, then (method key, caller node
 *     or -1) per trace node made since the previous drain; data is, per
 *     trace with new completed calls: owner, node, calls, self nanoseconds,
 *     total nanoseconds, where owner >= 0 indexes threads and owner < 0
 *     stands for the folded totals of thread serial -owner-1; failure is
 *     the first error that stopped a thread's timing, or null. drain()
 *     returns null instead when the tables cannot be read: the calling
 *     thread is inside them (a dump on a Java heap gone short, while this
 *     thread grew a table) or another thread holds them for 5 seconds;
 *     what grew is then reported by the next drain().
 *  6. Attached to a running JVM, where this class may be left from an
 *     earlier profile (a class cannot be undefined): call reset() before
 *     engaging it again, and after the last drain() of an attached
 *     profile. Every thread's timing, the trace tree and the folded totals
 *     start over, as in a class just defined, and their memory is let go.
 */
package hprof_rs;

/** Entry and exit hooks of instrumented methods, and per-thread timing. */
public final class Tracker {
    /** Non-zero while the agent collects; set by the agent through JNI. */
    private static volatile int engaged;
    /** Frames per trace; set by the agent before engaging. */
    private static int depth = 4;
    /**
     * The clock: monotonic nanoseconds, kept current (every ms or so) by
     * an agent thread, so that a timed call reads a field instead of calling
     * System.nanoTime() twice. 0 until the agent starts it: then nanoTime().
     */
    private static volatile long now;
    /** The first error that stopped a thread's timing. */
    private static volatile Throwable failure;
    /**
     * Which profile this is (reset() counts them): a thread's timing made
     * for an earlier profile is dropped at its next timed call. Plain: it
     * changes only while `engaged` is 0, and the hooks read `engaged` first.
     */
    private static int generation;
    /**
     * Set by the agent (through JNI, before engaging) when it registered
     * firstCall(): counting calls only, the first call of each method on
     * each thread is reported to it, so that a method no CPU sample ever
     * sees still has the trace it was called on.
     */
    private static boolean reportsFirstCalls;

    private static final ThreadLocal<Tracker> CURRENT = new ThreadLocal<>();
    /**
     * CURRENT's cache, by thread id (see current()). Slots of finished
     * threads are cleared when their timing is folded (fold()), and all at
     * reset(): it never holds more than its 4096 slots' timings of threads
     * gone. An empty slot holds VACANT, never null (CallCountInlined reads
     * a slot without a null check).
     */
    private static final Tracker[] BY_THREAD = new Tracker[4096];
    /** Stands in for a thread's timing while it is being made, so that
     * instrumented code run meanwhile is not timed (and cannot recurse). */
    private static final Tracker MAKING = new Tracker(null, 0);
    /** What an empty slot of BY_THREAD holds: the timing of no thread. */
    private static final Tracker VACANT = new Tracker(null, 0);

    /** A class's row of call counts before its first count (CallCountInlined
     * reads a row, and its slot 0, without a test: the slot stays 0, so the
     * read takes it out of line as a first call, and countCall replaces the
     * row). */
    private static final long[] NO_COUNTS = new long[1];
    /** A thread's table of call counts before its first count: one row
     * not counted yet, so that row 0 can always be read. */
    private static final long[][] NO_TABLE = {NO_COUNTS};

    /**
     * The lock guarding everything static below: a flag, not a monitor. A
     * virtual thread blocked on a monitor unmounts (JDK 24+), and a carrier
     * thread running timed scheduler code then waited on it for good; an
     * unlock is a plain volatile write, which no error can skip.
     */
    private static final Tracker LOCKS = new Tracker(null, 0);
    private volatile int locked;
    private static final java.util.concurrent.atomic.AtomicIntegerFieldUpdater<Tracker> LOCKED =
            java.util.concurrent.atomic.AtomicIntegerFieldUpdater.newUpdater(Tracker.class, "locked");

    // Everything static below is guarded by LOCKS (lock(); try ... finally { owner = null; LOCKS.locked = 0; }).

    /** Live threads' timing, for drain(); each knows its slot. */
    private static Tracker[] all;
    private static int allCount;
    /** Sweep dead threads when allCount reaches this. */
    private static int sweepAt;

    // The trace tree: node -> method, caller node (-1: none), trace length.
    private static long[] nodeMethod;
    private static int[] nodeCaller;
    private static int[] nodeLength;
    private static int[] nodeHash;
    private static int nodeCount;
    /** Node by (caller, method); a slot holds node + 1, 0 = empty. */
    private static int[] nodeIndex;
    /** Nodes drain() reported so far. */
    private static int nodesDrained;
    /** Scratch for trimming a trace to depth - 1 frames. */
    private static long[] window = new long[16];

    // Folded totals of finished threads: entry -> serial, node, counters.
    private static int[] foldSerial;
    private static int[] foldNode;
    private static int[] foldHash;
    private static long[] foldCalls;
    private static long[] foldSelf;
    private static long[] foldTotal;
    private static int foldCount;
    /** Entry by (serial, node); a slot holds entry + 1, 0 = empty. */
    private static int[] foldIndex;

    static {
        MAKING.busy = 1;
        VACANT.busy = 1;
        java.util.Arrays.fill(BY_THREAD, VACANT);
        clearThreadsAndTree();
        clearFolded();
    }

    private final Thread thread;
    /** The thread's id (getId()), or -1 for no thread: what CallCountInlined
     * compares, without a branch on the Thread itself. */
    private final long threadId;
    /** The profile it was made for (see `generation`). */
    private final int madeFor;
    /** 1 while this thread runs the tracker's own code (no re-entry), else
     * 0: an int, which CallCountInlined adds into its one test. */
    private int busy;
    /** Set when an error stopped this thread's timing: busy stays set. */
    private boolean failed;
    /** Index in `all`, -1 once folded (guarded by LOCKS). */
    private int slot = -1;

    // The shadow stack.
    private long[] stackMethod = new long[16];
    private int[] stackTrace = new int[16];
    private long[] stackStart = new long[16];
    private long[] stackCallees = new long[16];
    private int top;

    // This thread's traces: tree node and counters, and what was drained.
    private int[] localNode = new int[16];
    private int[] localHash = new int[16];
    /** Per trace, side by side (one cache line for a call's three adds):
     * completed calls, self nanoseconds, total nanoseconds. */
    private long[] counters = new long[3 * 16];
    // What drain() reported so far: grown and written under LOCKS.
    private long[] drainedCalls = new long[0];
    private long[] drainedSelf = new long[0];
    private long[] drainedTotal = new long[0];
    private int traceCount;
    /** Trace by node; a slot holds trace + 1, 0 = empty. */
    private int[] localIndex = new int[32];

    // Memo: (caller trace, method) -> trace, open addressing. Per slot two
    // longs side by side, so that a lookup reads one cache line: the method,
    // then the caller's trace (high half) and the trace (low half); -1: empty.
    private long[] memo = emptyMemo(32);
    private int memoCount;

    /** Calls counted on entry by CallCount and CallCountInlined (cpu=times
     * timed from samples), by class and method number (never null, nor is
     * a row: a class not counted yet has NO_COUNTS); and what drain()
     * reported of them so far (grown and written under LOCKS). */
    private long[][] callCounts = NO_TABLE;
    private long[][] drainedCallCounts = new long[0][];

    private Tracker(Thread thread, int madeFor) {
        this(thread, thread == null ? -1 : thread.getId(), madeFor);
    }

    private Tracker(Thread thread, long threadId, int madeFor) {
        this.thread = thread;
        this.threadId = threadId;
        this.madeFor = madeFor;
    }

    /** A memo of `slots` empty slots. */
    private static long[] emptyMemo(int slots) {
        long[] memo = new long[2 * slots];
        for (int i = 1; i < memo.length; i += 2) {
            memo[i] = -1L;
        }
        return memo;
    }

    /** The thread holding LOCKS, or null: set once it is taken, cleared before it is let go. */
    private static volatile Thread owner;

    /** How long drain() waits for another thread to let go of LOCKS. */
    private static final long DRAIN_PATIENCE_NANOS = 5_000_000_000L;

    /**
     * Takes the lock; the caller lets it go in a finally with
     * {@code owner = null; LOCKS.locked = 0;}, written out, not a call: a
     * StackOverflowError can strike at any call, and one between taking the
     * lock and entering the try, or in the finally before the lock is let go,
     * would keep it taken for ever. So nothing here calls anything once the
     * lock is taken.
     */
    private static void lock() {
        Thread me = Thread.currentThread();
        while (!LOCKED.compareAndSet(LOCKS, 0, 1)) {
            Thread.yield();
        }
        owner = me;
    }

    /**
     * lock() for drain(), which the agent calls at a dump: false, without the
     * lock, when this thread holds it already (the dump of a Java heap gone
     * short came while this thread grew one of the tables) or when another
     * thread keeps it for DRAIN_PATIENCE_NANOS. A dump must never wait for ever.
     */
    private static boolean lockForDrain() {
        Thread me = Thread.currentThread();
        long start = System.nanoTime();
        while (!LOCKED.compareAndSet(LOCKS, 0, 1)) {
            if (owner == me || System.nanoTime() - start > DRAIN_PATIENCE_NANOS) {
                return false;
            }
            Thread.yield();
        }
        owner = me;
        return true;
    }

    /**
     * This thread's timing: first from BY_THREAD, a table indexed by the
     * thread's id, then from the thread-local CURRENT (which the table's
     * slot then caches). A slot may hold a timing of any thread: `thread`
     * (final, so safely published through the plain array) says whose; two
     * threads sharing a slot fall back to CURRENT, which stays the truth.
     * Measured on H2 under cpu=times: 30.5 s against 33.5 s through CURRENT
     * alone, Rhino 84 s against 104 s. (The identity hash instead was
     * slower, 41 s: a thread object that other threads join() has an
     * inflated monitor, and its hash then takes a call into the VM.)
     */
    private static Tracker current() {
        Thread me = Thread.currentThread();
        int slot = cacheSlot(me);
        Tracker t = BY_THREAD[slot];
        if (t != null && t.thread == me && t.madeFor == generation) {
            return t;
        }
        t = fromThreadLocal();
        if (t.thread == me) {
            BY_THREAD[slot] = t;
        }
        return t;
    }

    /** The slot of BY_THREAD that caches `thread`'s timing. */
    private static int cacheSlot(Thread thread) {
        return (int) thread.getId() & (BY_THREAD.length - 1);
    }

    /** This thread's timing from CURRENT, made if it has none for this profile. */
    private static Tracker fromThreadLocal() {
        Tracker t = CURRENT.get();
        // (MAKING, of no thread, is never replaced: it stands in while a
        // thread's timing is being made.)
        if (t == null || (t.thread != null && t.madeFor != generation)) {
            t = null;
            CURRENT.set(MAKING);
            try {
                Tracker made = new Tracker(Thread.currentThread(), generation);
                list(made);
                t = made;
            } finally {
                // On an error, null: the thread is tried again later.
                CURRENT.set(t);
            }
        }
        return t;
    }

    // Arrays.copyOf, made here: heap=sites counts the allocations of the
    // JDK's classes (java.util.Arrays among them) but not this class's, so
    // the tables this class grows through its own `new` are not counted as
    // the program's objects when cpu=times runs beside heap=sites.

    /** The first {@code length} elements of {@code a}, padded with 0. */
    private static long[] copyOf(long[] a, int length) {
        long[] copy = new long[length];
        System.arraycopy(a, 0, copy, 0, Math.min(a.length, length));
        return copy;
    }

    /** The first {@code length} elements of {@code a}, padded with 0. */
    private static int[] copyOf(int[] a, int length) {
        int[] copy = new int[length];
        System.arraycopy(a, 0, copy, 0, Math.min(a.length, length));
        return copy;
    }

    /** The first {@code length} elements of {@code a}, padded with null. */
    private static Tracker[] copyOf(Tracker[] a, int length) {
        Tracker[] copy = new Tracker[length];
        System.arraycopy(a, 0, copy, 0, Math.min(a.length, length));
        return copy;
    }

    /** Called on entry to method number {@code mnum} of class number {@code cnum}. */
    @jdk.internal.vm.annotation.DontInline
    public static void CallSite(int cnum, int mnum) {
        if (engaged != 0) {
            try {
                Tracker t = current();
                if (t.busy == 0) {
                    t.busy = 1;
                    try {
                        t.enter(((long) cnum << 32) | (mnum & 0xFFFFFFFFL), clock());
                    } catch (Throwable e) {
                        t.failed |= stops(t, e);
                    } finally {
                        t.busy = t.failed ? 1 : 0;
                    }
                }
            } catch (Throwable e) {
                // Never into the program (see the class comment).
            }
        }
    }

    /** Called before each return of method number {@code mnum} of class number {@code cnum}. */
    @jdk.internal.vm.annotation.DontInline
    public static void ReturnSite(int cnum, int mnum) {
        if (engaged != 0) {
            try {
                Tracker t = current();
                if (t.busy == 0) {
                    t.busy = 1;
                    try {
                        t.exit(((long) cnum << 32) | (mnum & 0xFFFFFFFFL), clock());
                    } catch (Throwable e) {
                        t.failed |= stops(t, e);
                    } finally {
                        t.busy = t.failed ? 1 : 0;
                    }
                }
            } catch (Throwable e) {
                // Never into the program (see the class comment).
            }
        }
    }

    /**
     * A measuring aid (the agent's hidden bit X=0x2000000):
     * injected on entry only, it counts the call in the thread's own table,
     * reading no clock and keeping no stack, and the counts are never
     * reported: what counting every call exactly, without timing it, costs.
     * Its guard is written out as the hooks' is, so that it costs what theirs do.
     */
    @jdk.internal.vm.annotation.DontInline
    public static void CallCount(int cnum, int mnum) {
        if (engaged != 0) {
            try {
                Tracker t = current();
                if (t.busy == 0) {
                    t.busy = 1;
                    try {
                        t.countCall(cnum, mnum);
                    } catch (Throwable e) {
                        t.failed |= stops(t, e);
                    } finally {
                        t.busy = t.failed ? 1 : 0;
                    }
                }
            } catch (Throwable e) {
                // Never into the program (see the class comment).
            }
        }
    }

    /**
     * cpu=times' count of each call (timing=samples, its default), forced
     * inline into the program's methods (HotSpot's ForceInline, honoured in
     * classes of the boot loader) and written out small: the thread's cached
     * timing and its counter, no call made. Anything else (a thread not
     * cached yet or another thread's timing in its slot, a table to grow,
     * the method's first call on this thread, the tracker's own code
     * running, an earlier profile's timing) goes to CallCount, out of line.
     * Nothing in it can throw.
     *
     * Two tests lead out of line, and prime() takes both ways of each before
     * the program runs. C2 compiles a way the profile (this method's, shared
     * by every method it is inlined into) never saw taken as an uncommon
     * trap, which deoptimizes the compiled method the first time the way is
     * taken and makes it not entrant. A thread's first call of a method C2
     * compiled on another thread takes it (the new thread has no table
     * yet): a warmed-up recursion started on a thread of its own went on in
     * the interpreter and C1's code, whose frames are several times as
     * large, and overflowed its stack early (docs/decisions.md, 2026-12-07).
     * Hence one test of the thread, by its id (another thread's timing is
     * never read further), and one of everything else, its terms or-ed
     * together without a branch between them. (What priming cannot help, a
     * deep call made before C2 has compiled the recursion, the agent's
     * larger thread stacks cover: src/agent/jvm/thread_stacks.rs.)
     */
    @jdk.internal.vm.annotation.ForceInline
    public static void CallCountInlined(int cnum, int mnum) {
        if (engaged != 0) {
            long me = Thread.currentThread().getId();
            Tracker t = BY_THREAD[(int) me & (BY_THREAD.length - 1)];
            if (t.threadId == me) {
                long[][] byClass = t.callCounts;
                // -1 if cnum is past the table (row 0 is read instead), else 0.
                int pastTable = (byClass.length - 1 - cnum) >> 31;
                long[] methods = byClass[cnum & ~pastTable];
                int pastRow = (methods.length - 1 - mnum) >> 31;
                // (Every row has a slot 0: NO_COUNTS too.)
                long calls = methods[mnum & ~pastRow];
                // 1 for the method's first call on this thread (count 0), else 0.
                int first = (int) ((calls - 1) >>> 63);
                if ((pastTable | pastRow | first | t.busy | (t.madeFor ^ generation)) == 0) {
                    methods[mnum] = calls + 1;
                    return;
                }
            }
            CallCount(cnum, mnum);
        }
    }

    /** CallCountInlined's calls in prime(): see there. */
    private static final int PRIMING_CALLS = 8192;

    /**
     * Called by the agent once it has engaged the tracker to count calls
     * inlined (cpu=times' default; at VM init, on its thread, before the
     * program's code runs): calls CallCountInlined PRIMING_CALLS times, one
     * call in sixteen out of line by each of its two tests, so that its
     * profile holds both ways of each and C2 compiles them both (see
     * there). HotSpot profiles a method in the interpreter from about its
     * 512th call (tiered, with the default flags; its 3,300th without
     * tiers), and in the tier-3 code it compiles for it after 200: 1,024
     * calls were not always enough without tiers, 4,096 were. The calls are
     * counted nowhere: the three timings put in this thread's slot
     * meanwhile are listed in no table, the two that fail a test are busy
     * (CallCount does nothing for them), and the slot gets its timing back.
     */
    private static void prime() {
        Thread me = Thread.currentThread();
        long id = me.getId();
        int slot = cacheSlot(me);
        Tracker counting = new Tracker(me, id, generation);
        // (Counted once already: its calls are not a first call to report.)
        counting.callCounts = new long[][] {new long[] {1}};
        Tracker busy = new Tracker(me, id, generation);
        busy.busy = 1;
        Tracker other = new Tracker(me, ~id, generation);
        other.busy = 1;
        Tracker was = BY_THREAD[slot];
        try {
            for (int i = 0; i < PRIMING_CALLS; i++) {
                int turn = i & 15;
                BY_THREAD[slot] = turn == 14 ? busy : turn == 15 ? other : counting;
                CallCountInlined(0, 0);
            }
        } finally {
            BY_THREAD[slot] = was;
        }
    }

    private void countCall(int cnum, int mnum) {
        long[][] byClass = callCounts;
        if (cnum >= byClass.length) {
            // (Not copyOf: new rows are NO_COUNTS, never null.)
            long[][] grown = new long[Math.max(2 * byClass.length, cnum + 1)][];
            System.arraycopy(byClass, 0, grown, 0, byClass.length);
            for (int c = byClass.length; c < grown.length; c++) {
                grown[c] = NO_COUNTS;
            }
            byClass = grown;
            callCounts = grown;
        }
        long[] methods = byClass[cnum];
        if (methods == NO_COUNTS) {
            // (Shared, its one 0 read by CallCountInlined: never counted in.)
            methods = new long[mnum + 1];
            byClass[cnum] = methods;
        } else if (mnum >= methods.length) {
            methods = copyOf(methods, mnum + 1);
            byClass[cnum] = methods;
        }
        if (methods[mnum]++ == 0 && reportsFirstCalls) {
            firstCall(cnum, mnum);
        }
    }

    /**
     * The first call of method (cnum, mnum) on this thread, reported once
     * the call is counted: the agent walks this thread's stack for the
     * first such call of each method (natives registered by the agent).
     */
    private static native void firstCall(int cnum, int mnum);

    /**
     * The clock on entry to a leaf. Small enough for the JIT to inline, and
     * read whether or not the tracker is engaged: LeafSite decides.
     */
    public static long leafStart() {
        return clock();
    }

    /**
     * Called before each return of leaf method number {@code mnum} of class
     * number {@code cnum}, and when an exception leaves it, with the clock
     * read on its entry: the whole call, counted under its caller's trace.
     */
    @jdk.internal.vm.annotation.DontInline
    public static void LeafSite(int cnum, int mnum, long start) {
        if (engaged != 0) {
            try {
                Tracker t = current();
                if (t.busy == 0) {
                    t.busy = 1;
                    try {
                        t.leaf(((long) cnum << 32) | (mnum & 0xFFFFFFFFL), clock() - start);
                    } catch (Throwable e) {
                        t.failed |= stops(t, e);
                    } finally {
                        t.busy = t.failed ? 1 : 0;
                    }
                }
            } catch (Throwable e) {
                // Never into the program (see the class comment).
            }
        }
    }

    /**
     * Whether error `e`, caught inside the tracker, stops the thread's
     * timing: all but a StackOverflowError, which leaves the state
     * consistent. Remembers the first. No calls: the stack may be full.
     */
    private static boolean stops(Tracker t, Throwable e) {
        if (e instanceof StackOverflowError) {
            return false;
        }
        // (An error in a thread's timing of an earlier profile, let go of
        // by reset(), is none of the current profile's.)
        if (failure == null && (t == null || t.madeFor == generation)) {
            failure = e;
        }
        return true;
    }

    /**
     * Called by the agent (ThreadEnd) on the ending thread: its counts join
     * the folded totals of thread serial `serial` and its state is dropped.
     * The thread's timing is found in `all`, not through CURRENT: by
     * ThreadEnd, Thread.exit() has already dropped the thread's
     * thread-locals. (A scan of the live threads per ending thread.)
     */
    private static void ended(int serial) {
        Thread me = Thread.currentThread();
        try {
            lock();
            try {
                // Downwards: fold() moves the last entry into the freed slot.
                for (int i = allCount - 1; i >= 0; i--) {
                    if (all[i].thread == me) {
                        fold(all[i], serial);
                    }
                }
            } finally {
                owner = null;
                LOCKS.locked = 0;
            }
        } catch (Throwable e) {
            stops(null, e);
        }
    }

    /**
     * Never inlined, nor is exit, nor are CallSite and ReturnSite (HotSpot
     * honours the annotation in classes of the boot loader): inlined into
     * the program's methods, their values made each compiled frame larger,
     * and a compiled recursion on the main thread, whose stack no agent can
     * enlarge, kept a third of its depth (JDK 17: 13,117 of 39,349 levels,
     * now 29,509). The calls cost Rhino about 7% under cpu=times, H2 and
     * javac nothing measurable (BENCHMARKS.md, 2026-11-27, fifth).
     */
    @jdk.internal.vm.annotation.DontInline
    private void enter(long method, long time) {
        int caller = top == 0 ? -1 : stackTrace[top - 1];
        int trace = memoGet(caller, method);
        if (trace < 0) {
            trace = localTrace(node(caller < 0 ? -1 : localNode[caller], method));
            memoPut(caller, method, trace);
        }
        if (top == stackMethod.length) {
            growStack();
        }
        stackMethod[top] = method;
        stackTrace[top] = trace;
        stackStart[top] = time;
        stackCallees[top] = 0;
        top++;
    }

    /**
     * A completed call of leaf `method` that took `total` nanoseconds, all
     * its own: its trace is found as enter() finds one, then counted as
     * pop() counts, and the time joins the caller's callees. (A class
     * initializer the JVM ran inside the leaf was timed as a callee of the
     * caller, and is then subtracted from it twice: once a class.)
     */
    @jdk.internal.vm.annotation.DontInline
    private void leaf(long method, long total) {
        int caller = top == 0 ? -1 : stackTrace[top - 1];
        int trace = memoGet(caller, method);
        if (trace < 0) {
            trace = localTrace(node(caller < 0 ? -1 : localNode[caller], method));
            memoPut(caller, method, trace);
        }
        // No calls below (see pop()).
        if (total < 0) {
            total = 0;
        }
        long[] c = counters;
        c[3 * trace]++;
        c[3 * trace + 1] += total;
        c[3 * trace + 2] += total;
        if (top > 0) {
            stackCallees[top - 1] += total;
        }
    }

    /** Doubles the shadow stack: copies first, then switches in one go. */
    private void growStack() {
        int n = top * 2;
        long[] method = copyOf(stackMethod, n);
        int[] trace = copyOf(stackTrace, n);
        long[] start = copyOf(stackStart, n);
        long[] callees = copyOf(stackCallees, n);
        stackTrace = trace;
        stackStart = start;
        stackCallees = callees;
        stackMethod = method;
    }

    @jdk.internal.vm.annotation.DontInline
    private void exit(long method, long time) {
        if (top > 0 && stackMethod[top - 1] == method) {
            pop(time);
            return;
        }
        // Calls above it were left by an exception; a method not on the
        // stack (entered before timing began) is ignored.
        for (int i = top - 1; i >= 0; i--) {
            if (stackMethod[i] == method) {
                while (top > i) {
                    pop(time);
                }
                return;
            }
        }
    }

    private void pop(long time) {
        // No calls here: an error (a StackOverflowError can strike at any
        // call) must not leave a call popped but uncounted.
        int at = top - 1;
        long total = time - stackStart[at];
        if (total < 0) {
            total = 0;
        }
        long self = total - stackCallees[at];
        if (self < 0) {
            self = 0;
        }
        int trace = stackTrace[at];
        long[] c = counters;
        c[3 * trace]++;
        c[3 * trace + 1] += self;
        c[3 * trace + 2] += total;
        if (at > 0) {
            stackCallees[at - 1] += total;
        }
        top = at;
    }

    private static long clock() {
        long time = now;
        return time != 0 ? time : System.nanoTime();
    }

    private static int mix(long h) {
        h *= 0x9E3779B97F4A7C15L;
        return (int) (h ^ (h >>> 32));
    }

    private int memoGet(int caller, long method) {
        long[] m = memo;
        int mask = (m.length >>> 1) - 1;
        for (int i = mix(method * 31 + caller) & mask; ; i = (i + 1) & mask) {
            long entry = m[2 * i + 1];
            if (entry == -1L) {
                return -1;
            }
            if ((int) (entry >>> 32) == caller && m[2 * i] == method) {
                return (int) entry;
            }
        }
    }

    private void memoPut(int caller, long method, int trace) {
        long[] m = memo;
        int slots = m.length >>> 1;
        if (2 * (memoCount + 1) > slots) {
            long[] bigger = emptyMemo(2 * slots);
            for (int i = 0; i < slots; i++) {
                long entry = m[2 * i + 1];
                if (entry != -1L) {
                    memoInsert(bigger, (int) (entry >>> 32), m[2 * i], entry);
                }
            }
            memo = bigger;
            m = bigger;
        }
        memoInsert(m, caller, method, ((long) caller << 32) | (trace & 0xFFFFFFFFL));
        memoCount++;
    }

    private static void memoInsert(long[] m, int caller, long method, long entry) {
        int mask = (m.length >>> 1) - 1;
        int i = mix(method * 31 + caller) & mask;
        while (m[2 * i + 1] != -1L) {
            i = (i + 1) & mask;
        }
        m[2 * i] = method;
        m[2 * i + 1] = entry;
    }

    /** An index of `count` entries with hashes `hashes`, `size` slots. */
    private static int[] reindex(int[] hashes, int count, int size) {
        int[] index = new int[size];
        for (int e = 0; e < count; e++) {
            index[freeSlot(index, hashes[e])] = e + 1;
        }
        return index;
    }

    private static int freeSlot(int[] index, int hash) {
        int mask = index.length - 1;
        int slot = hash & mask;
        while (index[slot] != 0) {
            slot = (slot + 1) & mask;
        }
        return slot;
    }

    /** This thread's trace for tree node `node`, found or made. */
    private int localTrace(int node) {
        int hash = mix(node);
        int mask = localIndex.length - 1;
        for (int slot = hash & mask, e; (e = localIndex[slot]) != 0; slot = (slot + 1) & mask) {
            if (localNode[e - 1] == node) {
                return e - 1;
            }
        }
        int trace = traceCount;
        if (trace == localNode.length) {
            int n = trace * 2;
            int[] newNode = copyOf(localNode, n);
            int[] newHash = copyOf(localHash, n);
            long[] newCounters = copyOf(counters, 3 * n);
            counters = newCounters;
            localHash = newHash;
            localNode = newNode;
        }
        int[] index = localIndex;
        if (2 * (trace + 1) > index.length) {
            index = reindex(localHash, trace, index.length * 2);
        }
        int slot = freeSlot(index, hash);
        localNode[trace] = node;
        localHash[trace] = hash;
        index[slot] = trace + 1;
        localIndex = index;
        traceCount = trace + 1;
        return trace;
    }

    /** The tree node of `method` called from node `caller` (-1: none), trimmed to `depth` frames. */
    private static int node(int caller, long method) {
        lock();
        try {
            if (caller >= nodeCount) {
                // A node of the tree before a reset(), on a thread still
                // timing a call it entered then.
                caller = -1;
            }
            int d = depth < 1 ? 1 : depth;
            int parent = caller;
            if (caller >= 0 && nodeLength[caller] >= d) {
                parent = innermost(caller, d - 1);
            }
            return intern(parent, method);
        } finally {
            owner = null;
            LOCKS.locked = 0;
        }
    }

    /** The node of the `keep` innermost frames of node `node`'s trace. */
    private static int innermost(int node, int keep) {
        if (window.length < keep) {
            window = new long[keep];
        }
        long[] methods = window;
        for (int i = 0, n = node; i < keep; i++, n = nodeCaller[n]) {
            methods[i] = nodeMethod[n];
        }
        int inner = -1;
        for (int i = keep - 1; i >= 0; i--) {
            inner = intern(inner, methods[i]);
        }
        return inner;
    }

    /** The node (caller, method), found or made. */
    private static int intern(int caller, long method) {
        int hash = mix(method * 31 + caller);
        int mask = nodeIndex.length - 1;
        for (int slot = hash & mask, e; (e = nodeIndex[slot]) != 0; slot = (slot + 1) & mask) {
            if (nodeCaller[e - 1] == caller && nodeMethod[e - 1] == method) {
                return e - 1;
            }
        }
        int node = nodeCount;
        if (node == nodeMethod.length) {
            int n = node * 2;
            long[] newMethod = copyOf(nodeMethod, n);
            int[] newCaller = copyOf(nodeCaller, n);
            int[] newLength = copyOf(nodeLength, n);
            int[] newHash = copyOf(nodeHash, n);
            nodeCaller = newCaller;
            nodeLength = newLength;
            nodeHash = newHash;
            nodeMethod = newMethod;
        }
        int[] index = nodeIndex;
        if (2 * (node + 1) > index.length) {
            index = reindex(nodeHash, node, index.length * 2);
        }
        int slot = freeSlot(index, hash);
        nodeMethod[node] = method;
        nodeCaller[node] = caller;
        nodeLength[node] = caller < 0 ? 1 : nodeLength[caller] + 1;
        nodeHash[node] = hash;
        index[slot] = node + 1;
        nodeIndex = index;
        nodeCount = node + 1;
        return node;
    }

    /** Under LOCKS: `t` joins `all`, after a sweep when it has doubled. */
    private static void list(Tracker t) {
        lock();
        try {
            if (allCount >= sweepAt) {
                for (int i = allCount - 1; i >= 0; i--) {
                    Tracker old = all[i];
                    if (!old.thread.isAlive()) {
                        fold(old, 0);
                    }
                }
                sweepAt = Math.max(16, 2 * allCount);
            }
            if (allCount == all.length) {
                all = copyOf(all, allCount * 2);
            }
            t.slot = allCount;
            all[allCount++] = t;
        } finally {
            owner = null;
            LOCKS.locked = 0;
        }
    }

    /** Under LOCKS: `t`'s undrained counts join serial's folded totals; `t` leaves `all`. */
    private static void fold(Tracker t, int serial) {
        int cached = cacheSlot(t.thread);
        if (BY_THREAD[cached] == t) {
            BY_THREAD[cached] = VACANT;
        }
        collect(t, -1, serial);
        Tracker last = all[allCount - 1];
        all[t.slot] = last;
        last.slot = t.slot;
        all[--allCount] = null;
        t.slot = -1;
    }

    /**
     * Called by the agent before it engages the class again for a new
     * profile, and when an attached profile stops (engaged is 0):
     * everything starts over. A thread's own timing, still held by its
     * thread-local, gives up its tables now and is replaced at the
     * thread's next timed call (see current()).
     */
    private static void reset() {
        lock();
        try {
            for (int i = 0; i < allCount; i++) {
                all[i].letGo();
            }
            generation++;
            java.util.Arrays.fill(BY_THREAD, VACANT);
            clearThreadsAndTree();
            clearFolded();
            failure = null;
            now = 0;
        } finally {
            owner = null;
            LOCKS.locked = 0;
        }
    }

    /**
     * Under LOCKS: this timing is never used again; its tables are
     * replaced by small ones. Its thread is in no timed call (engaged is
     * 0), or at worst in one begun before: it then fails inside the
     * tracker's try, not counted and not reported (see stops()).
     */
    private void letGo() {
        busy = 1;
        failed = true;
        stackMethod = new long[1];
        stackTrace = new int[1];
        stackStart = new long[1];
        stackCallees = new long[1];
        top = 0;
        localNode = new int[1];
        localHash = new int[1];
        counters = new long[3];
        drainedCalls = new long[0];
        drainedSelf = new long[0];
        drainedTotal = new long[0];
        callCounts = NO_TABLE;
        drainedCallCounts = new long[0][];
        traceCount = 0;
        localIndex = new int[2];
        memo = emptyMemo(2);
        memoCount = 0;
    }

    private static void clearThreadsAndTree() {
        all = new Tracker[16];
        allCount = 0;
        sweepAt = 16;
        nodeMethod = new long[256];
        nodeCaller = new int[256];
        nodeLength = new int[256];
        nodeHash = new int[256];
        nodeIndex = new int[512];
        nodeCount = 0;
        nodesDrained = 0;
    }

    private static void clearFolded() {
        foldSerial = new int[16];
        foldNode = new int[16];
        foldHash = new int[16];
        foldCalls = new long[16];
        foldSelf = new long[16];
        foldTotal = new long[16];
        foldIndex = new int[32];
        foldCount = 0;
    }

    /** Under LOCKS: adds to the folded totals of (serial, node). */
    private static void addFolded(int serial, int node, long c, long s, long total) {
        int hash = mix(((long) serial << 32) | node);
        int mask = foldIndex.length - 1;
        int e;
        for (int slot = hash & mask; (e = foldIndex[slot]) != 0; slot = (slot + 1) & mask) {
            if (foldSerial[e - 1] == serial && foldNode[e - 1] == node) {
                break;
            }
        }
        if (e == 0) {
            e = foldCount + 1;
            if (foldCount == foldSerial.length) {
                int n = foldCount * 2;
                int[] newSerial = copyOf(foldSerial, n);
                int[] newNode = copyOf(foldNode, n);
                int[] newHash = copyOf(foldHash, n);
                long[] newCalls = copyOf(foldCalls, n);
                long[] newSelf = copyOf(foldSelf, n);
                long[] newTotal = copyOf(foldTotal, n);
                foldNode = newNode;
                foldHash = newHash;
                foldCalls = newCalls;
                foldSelf = newSelf;
                foldTotal = newTotal;
                foldSerial = newSerial;
            }
            int[] index = foldIndex;
            if (2 * (foldCount + 1) > index.length) {
                index = reindex(foldHash, foldCount, index.length * 2);
            }
            index[freeSlot(index, hash)] = e;
            foldSerial[e - 1] = serial;
            foldNode[e - 1] = node;
            foldHash[e - 1] = hash;
            foldIndex = index;
            foldCount = e;
        }
        foldCalls[e - 1] += c;
        foldSelf[e - 1] += s;
        foldTotal[e - 1] += total;
    }

    // drain()'s output, under LOCKS.
    private static long[] out;
    private static int outSize;

    private static void emit(int owner, int node, long c, long s, long total) {
        if (outSize + 5 > out.length) {
            out = copyOf(out, out.length * 2);
        }
        out[outSize] = owner;
        out[outSize + 1] = node;
        out[outSize + 2] = c;
        out[outSize + 3] = s;
        out[outSize + 4] = total;
        outSize += 5;
    }

    /**
     * Under LOCKS: what `t`'s counters grew by since the last
     * time, emitted for thread index `owner`, or folded into `serial`'s
     * totals when owner < 0. The owner may be growing its arrays
     * meanwhile: each is read once.
     */
    private static void collect(Tracker t, int owner, int serial) {
        long[] counters = t.counters;
        int[] nodes = t.localNode;
        int count = Math.min(t.traceCount, Math.min(counters.length / 3, nodes.length));
        if (t.drainedCalls.length < count) {
            long[] newCalls = copyOf(t.drainedCalls, count);
            long[] newSelf = copyOf(t.drainedSelf, count);
            long[] newTotal = copyOf(t.drainedTotal, count);
            t.drainedSelf = newSelf;
            t.drainedTotal = newTotal;
            t.drainedCalls = newCalls;
        }
        for (int trace = 0; trace < count; trace++) {
            long nowCalls = counters[3 * trace];
            long newCalls = nowCalls - t.drainedCalls[trace];
            if (newCalls <= 0) {
                continue;
            }
            long nowSelf = counters[3 * trace + 1];
            long nowTotal = counters[3 * trace + 2];
            if (owner < 0) {
                addFolded(serial, nodes[trace], newCalls, nowSelf - t.drainedSelf[trace], nowTotal - t.drainedTotal[trace]);
            } else {
                emit(owner, nodes[trace], newCalls, nowSelf - t.drainedSelf[trace], nowTotal - t.drainedTotal[trace]);
            }
            t.drainedCalls[trace] = nowCalls;
            t.drainedSelf[trace] = nowSelf;
            t.drainedTotal[trace] = nowTotal;
        }
        collectCallCounts(t, owner, serial);
    }

    /**
     * Under LOCKS: as collect(), for the calls counted on entry: each
     * method's count is the calls of a trace of that method alone, with no
     * time (the agent takes times and traces from samples). The owner may
     * replace its arrays meanwhile (only ever by larger copies): each is
     * read once, and a count it adds later is reported by the next drain.
     */
    private static void collectCallCounts(Tracker t, int owner, int serial) {
        long[][] byClass = t.callCounts;
        if (t.drainedCallCounts.length < byClass.length) {
            // (Not Arrays.copyOf: for an array of arrays it goes through
            // java.lang.reflect.Array, which may be rewritten code, whose
            // call into the tracker would wait for this very lock.)
            long[][] grown = new long[byClass.length][];
            System.arraycopy(t.drainedCallCounts, 0, grown, 0, t.drainedCallCounts.length);
            t.drainedCallCounts = grown;
        }
        long[][] drainedByClass = t.drainedCallCounts;
        for (int c = 0; c < byClass.length; c++) {
            long[] methods = byClass[c];
            if (methods == NO_COUNTS) {
                continue;
            }
            long[] drained = drainedByClass[c];
            if (drained == null || drained.length < methods.length) {
                drained = drained == null ? new long[methods.length] : copyOf(drained, methods.length);
                drainedByClass[c] = drained;
            }
            for (int m = 0; m < methods.length; m++) {
                long now = methods[m];
                long grew = now - drained[m];
                if (grew <= 0) {
                    continue;
                }
                int node = intern(-1, ((long) c << 32) | m);
                if (owner < 0) {
                    addFolded(serial, node, grew, 0, 0);
                } else {
                    emit(owner, node, grew, 0, 0);
                }
                drained[m] = now;
            }
        }
    }

    /** Called by the agent at a dump: see the class comment for what it returns. */
    private static Object[] drain() {
        // Code run from here (a virtual thread's isAlive()) is not timed.
        Tracker mine = CURRENT.get();
        CURRENT.set(MAKING);
        try {
            if (!lockForDrain()) {
                return null;
            }
            try {
                out = new long[256];
                outSize = 0;
                Thread[] owners = new Thread[allCount];
                for (int i = 0; i < allCount; i++) {
                    owners[i] = all[i].thread;
                    collect(all[i], i, 0);
                }
                for (int e = 0; e < foldCount; e++) {
                    emit(-1 - foldSerial[e], foldNode[e], foldCalls[e], foldSelf[e], foldTotal[e]);
                }
                long[] nodes = new long[1 + 2 * (nodeCount - nodesDrained)];
                nodes[0] = nodesDrained;
                for (int n = nodesDrained, at = 1; n < nodeCount; n++, at += 2) {
                    nodes[at] = nodeMethod[n];
                    nodes[at + 1] = nodeCaller[n];
                }
                Throwable first = failure;
                Object[] result = {owners, nodes, copyOf(out, outSize), first == null ? null : first.toString()};
                out = null;
                clearFolded();
                nodesDrained = nodeCount;
                return result;
            } finally {
                owner = null;
                LOCKS.locked = 0;
            }
        } finally {
            CURRENT.set(mine);
        }
    }
}
