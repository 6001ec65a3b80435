import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.AbstractQueuedSynchronizer;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * Contention on java.util.concurrent locks, with the waiting measured by
 * the program itself (System.nanoTime() around each lock() call, summed
 * over the threads) and printed as waited_ns=<total>. Modes:
 *
 *   reentrant   4 threads each take one ReentrantLock 50 times in
 *               takeReentrant(), holding it 4 ms each time
 *   readwrite   2 threads take one ReentrantReadWriteLock's write lock in
 *               takeWrite() and 2 its read lock in takeRead(), 30 times
 *               each, holding it 12 ms each time (longer than the others'
 *               4 ms: each of its waits has more hand-overs, and the time a
 *               woken thread waits for a core is in the program's figure,
 *               not in a park, so on a loaded machine the waits must be
 *               long beside it)
 *   condition   one thread awaits a Condition 3 times for 100 ms (timed
 *               out) and 3 times until another thread signals it after
 *               100 ms; no thread ever waits for the lock itself, and
 *               awaited_ns=<total> is printed as well
 *   uncontended one thread takes a ReentrantLock 100000 times
 *   parks       one thread parks exactly 1000 times in parkOnGate() with a
 *               synchronizer of its own (LockContention$Gate) as the
 *               blocker, its permit given first, so that each park
 *               returns at once; then once without a blocker and once
 *               with a plain Object as the blocker (neither counts)
 *   virtual     as reentrant with virtual threads (JDK 21+, reached
 *               through reflection)
 *   long <n>    prints READY (flushed), then as reentrant with n
 *               acquisitions per thread (long enough to attach to)
 *   dumped <profile>
 *               as reentrant with 25 acquisitions per thread, prints
 *               waited1_ns=<total> and PHASE1, waits until <profile> holds a
 *               LOCK TIME section (the test sends SIGQUIT), then the same
 *               again with new threads, and prints waited2_ns=<total>
 *
 * No thread start gate or latch: a CountDownLatch is itself a
 * synchronizer whose waits the agent reports.
 */
public class LockContention {
    static final int HOLD_MS = 4;
    static final int READ_WRITE_HOLD_MS = 12;
    static final AtomicLong waitedNanos = new AtomicLong();
    static final AtomicLong acquisitions = new AtomicLong();

    static final ReentrantLock reentrant = new ReentrantLock();
    static final ReentrantReadWriteLock readWrite = new ReentrantReadWriteLock();

    static void hold() {
        hold(HOLD_MS);
    }

    static void hold(int millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    static void takeReentrant(int times) {
        for (int i = 0; i < times; i++) {
            long start = System.nanoTime();
            reentrant.lock();
            try {
                waitedNanos.addAndGet(System.nanoTime() - start);
                acquisitions.incrementAndGet();
                hold();
            } finally {
                reentrant.unlock();
            }
        }
    }

    static void takeWrite(int times) {
        for (int i = 0; i < times; i++) {
            long start = System.nanoTime();
            readWrite.writeLock().lock();
            try {
                waitedNanos.addAndGet(System.nanoTime() - start);
                acquisitions.incrementAndGet();
                hold(READ_WRITE_HOLD_MS);
            } finally {
                readWrite.writeLock().unlock();
            }
        }
    }

    static void takeRead(int times) {
        for (int i = 0; i < times; i++) {
            long start = System.nanoTime();
            readWrite.readLock().lock();
            try {
                waitedNanos.addAndGet(System.nanoTime() - start);
                acquisitions.incrementAndGet();
                hold(READ_WRITE_HOLD_MS);
            } finally {
                readWrite.readLock().unlock();
            }
        }
    }

    static void runAll(Runnable... tasks) throws InterruptedException {
        Thread[] threads = new Thread[tasks.length];
        for (int i = 0; i < tasks.length; i++) {
            threads[i] = new Thread(tasks[i], "locker-" + (i + 1));
            threads[i].start();
        }
        for (Thread t : threads) {
            t.join();
        }
    }

    static void condition() throws InterruptedException {
        ReentrantLock lock = new ReentrantLock();
        Condition ready = lock.newCondition();
        long awaited = 0;
        lock.lock();
        try {
            for (int i = 0; i < 3; i++) {
                long start = System.nanoTime();
                ready.await(100, TimeUnit.MILLISECONDS);
                awaited += System.nanoTime() - start;
            }
            for (int i = 0; i < 3; i++) {
                Thread signaller = new Thread(() -> {
                    try {
                        Thread.sleep(100);
                    } catch (InterruptedException e) {
                        throw new IllegalStateException(e);
                    }
                    lock.lock();
                    try {
                        ready.signal();
                    } finally {
                        lock.unlock();
                    }
                }, "signaller-" + (i + 1));
                long start = System.nanoTime();
                signaller.start();
                ready.await();
                awaited += System.nanoTime() - start;
                signaller.join();
            }
        } finally {
            lock.unlock();
        }
        System.out.println("awaited_ns=" + awaited);
    }

    /** A synchronizer of the program's own. */
    static final class Gate extends AbstractQueuedSynchronizer {
    }

    static void parkOnGate(Gate gate, int times) {
        Thread me = Thread.currentThread();
        for (int i = 0; i < times; i++) {
            LockSupport.unpark(me);
            LockSupport.park(gate);
        }
        LockSupport.unpark(me);
        LockSupport.park();
        LockSupport.unpark(me);
        LockSupport.park(new Object());
    }

    static void uncontended() {
        ReentrantLock lock = new ReentrantLock();
        for (int i = 0; i < 100000; i++) {
            lock.lock();
            try {
                acquisitions.incrementAndGet();
            } finally {
                lock.unlock();
            }
        }
    }

    static void virtual() throws Exception {
        ExecutorService pool = (ExecutorService) Executors.class
                .getMethod("newVirtualThreadPerTaskExecutor")
                .invoke(null);
        for (int i = 0; i < 4; i++) {
            pool.execute(() -> takeReentrant(50));
        }
        pool.shutdown();
        pool.awaitTermination(1, TimeUnit.HOURS);
    }

    static void fourTakers(int times) throws InterruptedException {
        runAll(() -> takeReentrant(times), () -> takeReentrant(times),
                () -> takeReentrant(times), () -> takeReentrant(times));
    }

    static void dumped(String profile) throws Exception {
        fourTakers(25);
        System.out.println("waited1_ns=" + waitedNanos.getAndSet(0));
        System.out.println("PHASE1");
        System.out.flush();
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (System.nanoTime() < deadline
                && !(Files.exists(Paths.get(profile))
                        && new String(Files.readAllBytes(Paths.get(profile)), "UTF-8").contains("LOCK TIME END"))) {
            Thread.sleep(20);
        }
        fourTakers(25);
        System.out.println("waited2_ns=" + waitedNanos.getAndSet(0));
    }

    public static void main(String[] args) throws Exception {
        String mode = args.length > 0 ? args[0] : "reentrant";
        switch (mode) {
            case "reentrant":
                fourTakers(50);
                break;
            case "readwrite":
                runAll(() -> takeWrite(30), () -> takeRead(30),
                        () -> takeWrite(30), () -> takeRead(30));
                break;
            case "condition":
                condition();
                break;
            case "uncontended":
                uncontended();
                break;
            case "parks":
                parkOnGate(new Gate(), 1000);
                break;
            case "virtual":
                virtual();
                break;
            case "long":
                System.out.println("READY");
                System.out.flush();
                fourTakers(Integer.parseInt(args[1]));
                break;
            case "dumped":
                dumped(args[1]);
                break;
            default:
                throw new IllegalArgumentException(mode);
        }
        System.out.println("acquisitions=" + acquisitions.get());
        System.out.println("waited_ns=" + waitedNanos.get());
    }
}
