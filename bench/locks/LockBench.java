import java.util.concurrent.locks.AbstractQueuedSynchronizer;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * What monitor=y's java.util.concurrent hooks cost. Modes:
 *
 *   uncontended N       one thread takes a ReentrantLock N times (the lock
 *                       never blocks, so the hooks never run)
 *   contended T N       T threads each take one shared fair ReentrantLock N times
 *                       around some 400 multiply-adds of work, so that many
 *                       acquisitions block
 *
 *   hooks N             one thread parks N times on a synchronizer blocker
 *                       with its permit already given (unpark first), so
 *                       each park returns at once: what remains is the cost
 *                       of the hooks around a park, printed per park
 *
 * Prints the elapsed time and a checksum that must not depend on the agent.
 */
public class LockBench {
    /** Fair when contended: every acquisition then waits its turn, so most block. */
    static ReentrantLock lock = new ReentrantLock();
    static long shared;

    /** Steps of work inside the lock: 1 uncontended, 400 contended. */
    static int rounds = 1;

    static long work(long x) {
        for (int i = 0; i < rounds; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
        }
        return x;
    }

    static void take(int times) {
        for (int i = 0; i < times; i++) {
            lock.lock();
            try {
                shared = work(shared);
            } finally {
                lock.unlock();
            }
        }
    }

    public static void main(String[] args) throws Exception {
        long start = System.nanoTime();
        if (args[0].equals("uncontended")) {
            take(Integer.parseInt(args[1]));
        } else if (args[0].equals("hooks")) {
            int times = Integer.parseInt(args[1]);
            AbstractQueuedSynchronizer blocker = new AbstractQueuedSynchronizer() {
            };
            Thread me = Thread.currentThread();
            for (int i = 0; i < times; i++) {
                LockSupport.unpark(me);
                LockSupport.park(blocker);
            }
            System.out.println("ns_per_park=" + (System.nanoTime() - start) / times);
        } else {
            rounds = 400;
            lock = new ReentrantLock(true);
            int threads = Integer.parseInt(args[1]);
            int times = Integer.parseInt(args[2]);
            Thread[] all = new Thread[threads];
            for (int t = 0; t < threads; t++) {
                all[t] = new Thread(() -> take(times));
                all[t].start();
            }
            for (Thread t : all) {
                t.join();
            }
        }
        System.out.println("elapsed_ms=" + (System.nanoTime() - start) / 1_000_000);
        System.out.println("checksum=" + shared);
    }
}
