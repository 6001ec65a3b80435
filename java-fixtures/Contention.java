import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Lock contention with figures the program measures itself. Four threads,
 * "contender-1" to "contender-4", each call the synchronized method
 * critical() `entries` times (args[0], default 50) on one shared Contention
 * object, holding its monitor about 4 ms each time (a sleep inside it).
 * Each call passes System.nanoTime() from just before it, so critical()
 * adds how long getting in took. Meanwhile the thread "waiter" calls
 * wait(300) three times on a Contention$WaitLock that nobody notifies.
 *
 * With "virtual" as args[1] the contenders are virtual threads (JDK 21+,
 * reached through reflection). Prints READY (flushed) once the contenders
 * are let go, then at the end:
 *   waited_ns=<sum of the contenders' time to get into critical()>
 *   entries=<calls of critical(): 4 x entries>
 *   blocked=<times the contenders blocked entering a monitor during their
 *            loops, as java.lang.management counts them, read by main while
 *            they are parked before and after> (platform threads only)
 */
public class Contention {
    static final int THREADS = 4;
    static final long HOLD_MS = 4;
    static final int WAITS = 3;
    static final long WAIT_MS = 300;

    static final AtomicLong waitedNanos = new AtomicLong();
    static final AtomicLong entries = new AtomicLong();

    /** The monitor of Object.wait: never notified, so each wait times out. */
    static final class WaitLock {}

    private long held;

    synchronized void critical(long calledAt) throws InterruptedException {
        waitedNanos.addAndGet(System.nanoTime() - calledAt);
        entries.incrementAndGet();
        held++;
        Thread.sleep(HOLD_MS);
    }

    static void contend(Contention shared, int times, Latches latches) {
        try {
            latches.ready.countDown();
            latches.go.await();
            for (int i = 0; i < times; i++) {
                shared.critical(System.nanoTime());
            }
            latches.done.countDown();
            latches.leave.await();
        } catch (InterruptedException e) {
            throw new RuntimeException(e);
        }
    }

    /**
     * The steps contenders and main take together. Latches park, which
     * java.lang.management does not count as blocking on a monitor.
     */
    static final class Latches {
        final CountDownLatch ready = new CountDownLatch(THREADS);
        final CountDownLatch go = new CountDownLatch(1);
        final CountDownLatch done = new CountDownLatch(THREADS);
        final CountDownLatch leave = new CountDownLatch(1);
    }

    /** How many times `threads` blocked entering a monitor so far. */
    static long blockedCount(Thread[] threads) {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long sum = 0;
        for (Thread t : threads) {
            sum += mx.getThreadInfo(t.getId()).getBlockedCount();
        }
        return sum;
    }

    static void waitThrice() {
        WaitLock lock = new WaitLock();
        try {
            synchronized (lock) {
                for (int i = 0; i < WAITS; i++) {
                    lock.wait(WAIT_MS);
                }
            }
        } catch (InterruptedException e) {
            throw new RuntimeException(e);
        }
    }

    static Thread start(String name, Runnable task, boolean virtual) throws Exception {
        if (!virtual) {
            Thread thread = new Thread(task, name);
            thread.start();
            return thread;
        }
        Class<?> builderType = Class.forName("java.lang.Thread$Builder");
        Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
        builder = builderType.getMethod("name", String.class).invoke(builder, name);
        return (Thread) builderType.getMethod("start", Runnable.class).invoke(builder, task);
    }

    public static void main(String[] args) throws Exception {
        int times = args.length > 0 ? Integer.parseInt(args[0]) : 50;
        boolean virtual = args.length > 1 && args[1].equals("virtual");
        Contention shared = new Contention();
        Latches latches = new Latches();
        Thread[] contenders = new Thread[THREADS];
        for (int i = 0; i < THREADS; i++) {
            contenders[i] = start("contender-" + (i + 1),
                    () -> contend(shared, times, latches), virtual);
        }
        Thread waiter = start("waiter", Contention::waitThrice, false);
        // The blocked counts are read while the contenders are parked on a
        // latch, before and after their loops: only the loops count.
        latches.ready.await();
        long before = virtual ? 0 : blockedCount(contenders);
        latches.go.countDown();
        System.out.println("READY");
        System.out.flush();
        latches.done.await();
        long after = virtual ? 0 : blockedCount(contenders);
        latches.leave.countDown();
        for (Thread t : contenders) {
            t.join();
        }
        waiter.join();
        System.out.println("waited_ns=" + waitedNanos.get());
        System.out.println("entries=" + entries.get());
        if (!virtual) {
            System.out.println("blocked=" + (after - before));
        }
    }
}
