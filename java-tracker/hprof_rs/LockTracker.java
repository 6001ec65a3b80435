/*
 * The class the byte code injected by hprof-rs for monitor=y calls: it
 * times how long threads stay blocked acquiring java.util.concurrent locks
 * (ReentrantLock, ReentrantReadWriteLock and every other lock built on
 * AbstractQueuedSynchronizer or AbstractQueuedLongSynchronizer).
 *
 * Such a lock blocks its thread in LockSupport.park(Object blocker) or
 * LockSupport.parkNanos(Object blocker, long nanos), the blocker being the
 * synchronizer itself; an uncontended lock never gets there. The agent
 * rewrites those two methods (retransforming LockSupport) so that they run
 *     aload_0; invokestatic hprof_rs/LockTracker.parking(Ljava/lang/Object;)V
 * on entry and
 *     aload_0; invokestatic hprof_rs/LockTracker.parked(Ljava/lang/Object;)V
 * before each return. Both do nothing until the agent engages the tracker,
 * and nothing for any other blocker: Condition awaits (a ConditionObject
 * blocker, or LockSupport.park() with none), FutureTask, Phaser, ... are
 * not lock acquisitions.
 *
 * Before a timed park the thread calls the native method site(lock), which
 * the agent registers: it takes the thread's stack, while the thread is
 * still to block (a stack walk after waking would delay the thread that is
 * to take the lock next), and returns the number of the (stack, lock
 * class) pair, 0 for none. After the park, blocked(site, nanos) adds the
 * time to that pair, a few atomic additions. `lock` is the number the agent
 * gives the lock's class (register(Class), asked once per class). This is
 * one class with no nested ones: the agent defines it alone.
 *
 * The tracker never throws into the program: every error is swallowed (the
 * park then simply goes uncounted).
 *
 * What the agent must do:
 *  1. At VM init, define this class in the boot loader (JNI DefineClass
 *     with a null loader) and register its two native methods.
 *  2. Set `engaged` non-zero (SetStaticIntField), then rewrite LockSupport.
 *     Set `engaged` back to 0 at the start of VM death.
 */
package hprof_rs;

import java.util.concurrent.locks.AbstractQueuedLongSynchronizer;
import java.util.concurrent.locks.AbstractQueuedSynchronizer;

/** Entry and exit hooks of LockSupport's parks with a blocker. */
public final class LockTracker {
    /** Non-zero while the agent collects; set by the agent through JNI. */
    private static volatile int engaged;

    /** Per thread: when its current timed park began (0: none), and its site. */
    private static final ThreadLocal<long[]> PARKED_AT = new ThreadLocal<>();

    /**
     * The lock classes seen, at the index of the agent's number for each
     * (null: not seen yet). Copied on write; a racing writer may lose an
     * entry, which only means one more register() call later.
     */
    private static volatile Class<?>[] lockClasses = new Class<?>[0];

    private LockTracker() {
    }

    /** On entry to LockSupport.park(Object) and parkNanos(Object, long). */
    public static void parking(Object blocker) {
        if (engaged != 0 && isLock(blocker)) {
            try {
                long[] at = PARKED_AT.get();
                if (at == null) {
                    at = new long[2];
                    PARKED_AT.set(at);
                }
                at[1] = site(number(blocker.getClass()));
                at[0] = System.nanoTime();
            } catch (Throwable e) {
                // Never into the program (see the class comment).
            }
        }
    }

    /** Before each return of LockSupport.park(Object) and parkNanos(Object, long). */
    public static void parked(Object blocker) {
        if (engaged != 0 && isLock(blocker)) {
            try {
                long[] at = PARKED_AT.get();
                if (at != null && at[0] != 0) {
                    long waited = System.nanoTime() - at[0];
                    long site = at[1];
                    at[0] = 0;
                    at[1] = 0;
                    if (site != 0) {
                        blocked(site, waited);
                    }
                }
            } catch (Throwable e) {
                // Never into the program (see the class comment).
            }
        }
    }

    /** The agent's number for `lockClass`, asked of the agent once per class. */
    private static int number(Class<?> lockClass) {
        Class<?>[] known = lockClasses;
        for (int i = 0; i < known.length; i++) {
            if (known[i] == lockClass) {
                return i;
            }
        }
        int number = register(lockClass);
        if (number >= 0) {
            Class<?>[] grown = java.util.Arrays.copyOf(known, Math.max(known.length, number + 1));
            grown[number] = lockClass;
            lockClasses = grown;
        }
        return number;
    }

    private static boolean isLock(Object blocker) {
        return blocker instanceof AbstractQueuedSynchronizer
                || blocker instanceof AbstractQueuedLongSynchronizer;
    }

    /** The agent's number for lock class `lockClass`, or -1 (implemented by the agent). */
    private static native int register(Class<?> lockClass);

    /**
     * The current thread is about to block on a lock of class number `lock`:
     * the number of its (stack, lock class) pair, 0 for none (implemented by
     * the agent).
     */
    private static native long site(int lock);

    /** A thread was blocked `nanos` at site `site` (implemented by the agent). */
    private static native void blocked(long site, long nanos);
}
