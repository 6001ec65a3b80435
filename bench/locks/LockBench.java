import java.util.concurrent.locks.ReentrantLock;

/**
 * What monitor=y's java.util.concurrent hooks cost. Modes:
 *
 *   uncontended N       one thread takes a ReentrantLock N times (the lock
 *                       never blocks, so the hooks never run)
 *   contended T N       T threads each take one shared ReentrantLock N times
 *                       around a few hundred nanoseconds of work, so that
 *                       most acquisitions block
 *
 * Prints the elapsed time and a checksum that must not depend on the agent.
 */
public class LockBench {
    static final ReentrantLock lock = new ReentrantLock();
    static long shared;

    static long work(long x) {
        for (int i = 0; i < 50; i++) {
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
        } else {
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
