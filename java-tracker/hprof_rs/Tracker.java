/*
 * The class the byte code injected by hprof-rs (src/bci, cpu=times and
 * cpu=old) calls: HPROF's com.sun.demo.jvmti.hprof.Tracker, with the
 * timing kept here, in Java, so that a timed call costs no JNI transition.
 *
 * Every instrumented method starts with
 *     ldc <class number>; <push method number>; invokestatic hprof_rs/Tracker.CallSite(II)V
 * and runs
 *     ldc <class number>; <push method number>; invokestatic hprof_rs/Tracker.ReturnSite(II)V
 * before each return instruction. Both do nothing until the agent engages
 * the tracker.
 *
 * Each thread keeps a shadow stack of the calls in progress and the costs
 * of completed calls per trace (the method and up to depth-1 callers,
 * method keys (class number << 32 | method number), innermost first). A
 * call's trace is found once, on entry, from its caller's trace through a
 * memo table; an exit only adds to that trace's counters. Counters only
 * grow; drain() reports what grew since the previous drain, so the owner
 * thread and the agent never write the same memory.
 *
 * What the agent must do:
 *  1. In Agent_OnLoad, put this class on the boot class path
 *     (AddToBootstrapClassLoaderSearch with a directory holding
 *     hprof_rs/Tracker.class, the bytes of hprof_rs::bci::TRACKER_CLASS_FILE).
 *  2. Instrument nothing before VMInit: the boot class path append is not
 *     searched until the module system is up. Never instrument this class.
 *  3. At VMInit, set `depth` (trace frames) and start keeping `now`
 *     current (SetStaticLongField from an agent thread, every 100 us or
 *     so), then set `engaged` to non-zero
 *     (SetStaticIntField; private fields are fine for JNI). Set `engaged`
 *     back to 0 at the start of VMDeath.
 *  4. On JVMTI ExceptionCatch, call caught(key) on the catching thread with
 *     the catching method's key: the calls above it ended by the exception.
 *  5. At each dump call drain() (returns {Thread[] threads, long[] data};
 *     data is, per trace with new completed calls: thread index, trace
 *     length n, n method keys, calls, self nanoseconds, total nanoseconds).
 */
package hprof_rs;

/** Entry and exit hooks of instrumented methods, and per-thread timing. */
public final class Tracker {
    /** Non-zero while the agent collects; set by the agent through JNI. */
    private static volatile int engaged;
    /** Frames per trace; set by the agent before engaging. */
    private static int depth = 4;
    /**
     * The clock: monotonic nanoseconds, kept current (every 100 us or so) by
     * an agent thread, so that a timed call reads a field instead of calling
     * System.nanoTime() twice. 0 until the agent starts it: then nanoTime().
     */
    private static volatile long now;

    private static final ThreadLocal<Tracker> CURRENT = new ThreadLocal<>();
    /** Stands in for a thread's timing while it is being made, so that
     * instrumented code run meanwhile is not timed (and cannot recurse). */
    private static final Tracker MAKING = new Tracker(null, 1);
    /** Every thread's timing, for drain(); guarded by Tracker.class. */
    private static Tracker[] all = new Tracker[16];
    private static int allCount;

    private final Thread thread;
    /** Set while this thread runs the tracker's own code (no re-entry). */
    private boolean busy;

    // The shadow stack.
    private long[] stackMethod = new long[64];
    private int[] stackTrace = new int[64];
    private long[] stackStart = new long[64];
    private long[] stackCallees = new long[64];
    private int top;

    // Traces: keys (depth slots each), length, counters, and what was drained.
    private long[] traceKeys = new long[64 * 4];
    private int[] traceLength = new int[64];
    private long[] calls = new long[64];
    private long[] selfNanos = new long[64];
    private long[] totalNanos = new long[64];
    // What drain() reported so far: grown and written by drain() only.
    private long[] drainedCalls = new long[0];
    private long[] drainedSelf = new long[0];
    private long[] drainedTotal = new long[0];
    private int traceCount;
    private final int traceDepth;

    // Memo: (caller trace, method) -> trace, open addressing.
    private int[] memoCaller = new int[256];
    private long[] memoMethod = new long[256];
    private int[] memoTrace = filled(256);
    private int memoCount;

    // Trace index by key, open addressing (slot holds trace + 1, 0 = empty).
    private int[] keyIndex = new int[256];

    private Tracker(Thread thread, int traceDepth) {
        this.thread = thread;
        this.traceDepth = traceDepth;
    }

    private static int[] filled(int n) {
        int[] a = new int[n];
        java.util.Arrays.fill(a, -1);
        return a;
    }

    static {
        MAKING.busy = true;
    }

    private static Tracker current() {
        Tracker t = CURRENT.get();
        if (t == null) {
            CURRENT.set(MAKING);
            t = new Tracker(Thread.currentThread(), Math.max(1, depth));
            CURRENT.set(t);
            synchronized (Tracker.class) {
                if (allCount == all.length) {
                    all = java.util.Arrays.copyOf(all, allCount * 2);
                }
                all[allCount++] = t;
            }
        }
        return t;
    }

    /** Called on entry to method number {@code mnum} of class number {@code cnum}. */
    public static void CallSite(int cnum, int mnum) {
        if (engaged != 0) {
            try {
                Tracker t = current();
                if (!t.busy) {
                    t.busy = true;
                    try {
                        t.enter(((long) cnum << 32) | (mnum & 0xFFFFFFFFL), clock());
                    } finally {
                        t.busy = false;
                    }
                }
            } catch (Throwable e) {
                // Never into the program (see the class comment).
            }
        }
    }

    /** Called before each return of method number {@code mnum} of class number {@code cnum}. */
    public static void ReturnSite(int cnum, int mnum) {
        if (engaged != 0) {
            try {
                Tracker t = current();
                if (!t.busy) {
                    t.busy = true;
                    try {
                        t.exit(((long) cnum << 32) | (mnum & 0xFFFFFFFFL), clock());
                    } finally {
                        t.busy = false;
                    }
                }
            } catch (Throwable e) {
                // Never into the program (see the class comment).
            }
        }
    }

    /** Called by the agent (ExceptionCatch): the calls above `key`'s innermost activation ended. */
    private static void caught(long key) {
        Tracker t = CURRENT.get();
        if (t == null || t.busy) {
            return;
        }
        t.busy = true;
        try {
            long time = clock();
            for (int i = t.top - 1; i >= 0; i--) {
                if (t.stackMethod[i] == key) {
                    while (t.top > i + 1) {
                        t.pop(time);
                    }
                    break;
                }
            }
        } finally {
            t.busy = false;
        }
    }

    private void enter(long method, long time) {
        int caller = top == 0 ? -1 : stackTrace[top - 1];
        int trace = memoGet(caller, method);
        if (trace < 0) {
            trace = traceFor(caller, method);
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

    /** Doubles the shadow stack: copies first, then switches in one go. */
    private void growStack() {
        int n = top * 2;
        long[] method = java.util.Arrays.copyOf(stackMethod, n);
        int[] trace = java.util.Arrays.copyOf(stackTrace, n);
        long[] start = java.util.Arrays.copyOf(stackStart, n);
        long[] callees = java.util.Arrays.copyOf(stackCallees, n);
        stackTrace = trace;
        stackStart = start;
        stackCallees = callees;
        stackMethod = method;
    }

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
        calls[trace]++;
        selfNanos[trace] += self;
        totalNanos[trace] += total;
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
        int mask = memoCaller.length - 1;
        for (int i = mix(method * 31 + caller) & mask; ; i = (i + 1) & mask) {
            int t = memoTrace[i];
            if (t < 0) {
                return -1;
            }
            if (memoCaller[i] == caller && memoMethod[i] == method) {
                return t;
            }
        }
    }

    private void memoPut(int caller, long method, int trace) {
        if (2 * (memoCount + 1) > memoCaller.length) {
            int n = memoCaller.length * 2;
            int[] newCaller = new int[n];
            long[] newMethod = new long[n];
            int[] newTrace = filled(n);
            for (int i = 0; i < memoCaller.length; i++) {
                if (memoTrace[i] >= 0) {
                    memoInsert(newCaller, newMethod, newTrace, memoCaller[i], memoMethod[i], memoTrace[i]);
                }
            }
            memoCaller = newCaller;
            memoMethod = newMethod;
            memoTrace = newTrace;
        }
        memoInsert(memoCaller, memoMethod, memoTrace, caller, method, trace);
        memoCount++;
    }

    private static void memoInsert(int[] callers, long[] methods, int[] traces, int caller, long method, int trace) {
        int mask = callers.length - 1;
        int i = mix(method * 31 + caller) & mask;
        while (traces[i] >= 0) {
            i = (i + 1) & mask;
        }
        callers[i] = caller;
        methods[i] = method;
        traces[i] = trace;
    }

    /** The trace of `method` called from trace `caller` (-1: none), found or made. */
    private int traceFor(int caller, long method) {
        int d = traceDepth;
        long[] key = new long[d];
        key[0] = method;
        int length = 1;
        if (caller >= 0) {
            int outer = traceLength[caller];
            for (int i = 0; i < outer && length < d; i++) {
                key[length++] = traceKeys[caller * d + i];
            }
        }
        long h = length;
        for (int i = 0; i < length; i++) {
            h = h * 31 + key[i];
        }
        int mask = keyIndex.length - 1;
        int slot = mix(h) & mask;
        while (keyIndex[slot] != 0) {
            int t = keyIndex[slot] - 1;
            if (sameKey(t, key, length)) {
                return t;
            }
            slot = (slot + 1) & mask;
        }
        int trace = traceCount;
        if (trace == traceLength.length) {
            // Copies first, then the switch: an error between leaves all as it was.
            int n = trace * 2;
            long[] newKeys = java.util.Arrays.copyOf(traceKeys, n * d);
            int[] newLength = java.util.Arrays.copyOf(traceLength, n);
            long[] newCalls = java.util.Arrays.copyOf(calls, n);
            long[] newSelf = java.util.Arrays.copyOf(selfNanos, n);
            long[] newTotal = java.util.Arrays.copyOf(totalNanos, n);
            traceKeys = newKeys;
            calls = newCalls;
            selfNanos = newSelf;
            totalNanos = newTotal;
            traceLength = newLength;
        }
        if (traceKeys.length < traceLength.length * d) {
            traceKeys = java.util.Arrays.copyOf(traceKeys, traceLength.length * d);
        }
        if (2 * (traceCount + 1) > keyIndex.length) {
            rehashKeys();
            slot = mix(h) & (keyIndex.length - 1);
            while (keyIndex[slot] != 0) {
                slot = (slot + 1) & (keyIndex.length - 1);
            }
        }
        System.arraycopy(key, 0, traceKeys, trace * d, length);
        traceLength[trace] = length;
        keyIndex[slot] = trace + 1;
        traceCount = trace + 1;
        return trace;
    }

    private boolean sameKey(int trace, long[] key, int length) {
        if (traceLength[trace] != length) {
            return false;
        }
        for (int i = 0; i < length; i++) {
            if (traceKeys[trace * traceDepth + i] != key[i]) {
                return false;
            }
        }
        return true;
    }

    private void rehashKeys() {
        int[] index = new int[keyIndex.length * 2];
        int mask = index.length - 1;
        for (int t = 0; t < traceCount; t++) {
            long h = traceLength[t];
            for (int i = 0; i < traceLength[t]; i++) {
                h = h * 31 + traceKeys[t * traceDepth + i];
            }
            int slot = mix(h) & mask;
            while (index[slot] != 0) {
                slot = (slot + 1) & mask;
            }
            index[slot] = t + 1;
        }
        keyIndex = index;
    }

    /**
     * Called by the agent at a dump: {Thread[] threads, long[] data} with,
     * per trace with calls completed since the previous drain: thread index,
     * length n, n method keys, calls, self ns, total ns.
     */
    private static Object[] drain() {
        Tracker[] threads;
        synchronized (Tracker.class) {
            threads = java.util.Arrays.copyOf(all, allCount);
        }
        long[] data = new long[256];
        int size = 0;
        for (int ti = 0; ti < threads.length; ti++) {
            Tracker t = threads[ti];
            // The owner may grow its arrays meanwhile: read each once.
            long[] calls = t.calls;
            long[] selfNanos = t.selfNanos;
            long[] totalNanos = t.totalNanos;
            long[] traceKeys = t.traceKeys;
            int[] traceLength = t.traceLength;
            int count = Math.min(t.traceCount, Math.min(calls.length, Math.min(selfNanos.length, totalNanos.length)));
            count = Math.min(count, Math.min(traceLength.length, traceKeys.length / t.traceDepth));
            if (t.drainedCalls.length < count) {
                t.drainedCalls = java.util.Arrays.copyOf(t.drainedCalls, count);
                t.drainedSelf = java.util.Arrays.copyOf(t.drainedSelf, count);
                t.drainedTotal = java.util.Arrays.copyOf(t.drainedTotal, count);
            }
            for (int trace = 0; trace < count; trace++) {
                long c = calls[trace];
                long newCalls = c - t.drainedCalls[trace];
                if (newCalls <= 0) {
                    continue;
                }
                long s = selfNanos[trace];
                long total = totalNanos[trace];
                int n = traceLength[trace];
                if (size + n + 5 > data.length) {
                    data = java.util.Arrays.copyOf(data, Math.max(data.length * 2, size + n + 5));
                }
                data[size++] = ti;
                data[size++] = n;
                for (int i = 0; i < n; i++) {
                    data[size++] = traceKeys[trace * t.traceDepth + i];
                }
                data[size++] = newCalls;
                data[size++] = s - t.drainedSelf[trace];
                data[size++] = total - t.drainedTotal[trace];
                t.drainedCalls[trace] = c;
                t.drainedSelf[trace] = s;
                t.drainedTotal[trace] = total;
            }
        }
        Thread[] owners = new Thread[threads.length];
        for (int i = 0; i < threads.length; i++) {
            owners[i] = threads[i].thread;
        }
        return new Object[] {owners, java.util.Arrays.copyOf(data, size)};
    }
}
