import java.util.Arrays;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Workload "idle2000" / "idle200": a service with many threads of which few work. THREADS
 * threads start; all but WORKERS of them wait on a latch for the whole run (an idle pool), and
 * WORKERS threads each sort ROUNDS arrays of pseudo-random ints drawn from their own seed. The
 * checksum is the sum of every sorted array's sampled elements, the same for any interleaving.
 *
 * Usage: IdleThreads [THREADS [WORKERS [ROUNDS]]]   (defaults 2000, 10, 1500)
 */
public final class IdleThreads {
    public static void main(String[] args) throws Exception {
        int threads = args.length > 0 ? Integer.parseInt(args[0]) : 2000;
        int workers = args.length > 1 ? Integer.parseInt(args[1]) : 10;
        int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 1500;
        CountDownLatch end = new CountDownLatch(1);
        Thread[] idle = new Thread[threads - workers];
        for (int i = 0; i < idle.length; i++) {
            idle[i] = new Thread(() -> {
                try {
                    end.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "idle-" + i);
            idle[i].setDaemon(true);
            idle[i].start();
        }
        AtomicLong checksum = new AtomicLong();
        Thread[] busy = new Thread[workers];
        for (int w = 0; w < workers; w++) {
            final long seed = 1000 + w;
            busy[w] = new Thread(() -> checksum.addAndGet(work(seed, rounds)), "worker-" + w);
            busy[w].start();
        }
        for (Thread t : busy) {
            t.join();
        }
        end.countDown();
        for (Thread t : idle) {
            t.join();
        }
        System.out.println("checksum=" + checksum.get());
    }

    static long work(long seed, int rounds) {
        long state = seed;
        long sum = 0;
        int[] values = new int[20_000];
        for (int round = 0; round < rounds; round++) {
            for (int i = 0; i < values.length; i++) {
                state = state * 6364136223846793005L + 1442695040888963407L;
                values[i] = (int) (state >>> 33);
            }
            Arrays.sort(values);
            sum += values[round % values.length] + values[values.length / 2];
        }
        return sum;
    }
}
