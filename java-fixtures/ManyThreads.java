import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * 20,000 short-lived threads, each calling work() exactly 10 times:
 * virtual threads with the argument "virtual" (JDK 21+, reached through
 * reflection), else platform threads, 100 at a time. Prints the number of
 * work() calls: 200000.
 */
public class ManyThreads {
    static final int THREADS = 20_000;
    static final int CALLS = 10;
    static final AtomicLong done = new AtomicLong();

    static void work() {
        done.incrementAndGet();
    }

    static void task() {
        for (int i = 0; i < CALLS; i++) {
            work();
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("virtual")) {
            ExecutorService pool = (ExecutorService) Executors.class
                    .getMethod("newVirtualThreadPerTaskExecutor")
                    .invoke(null);
            for (int i = 0; i < THREADS; i++) {
                pool.execute(ManyThreads::task);
            }
            pool.shutdown();
            pool.awaitTermination(1, TimeUnit.HOURS);
        } else {
            for (int started = 0; started < THREADS; started += 100) {
                Thread[] batch = new Thread[100];
                for (int i = 0; i < batch.length; i++) {
                    batch[i] = new Thread(ManyThreads::task);
                    batch[i].start();
                }
                for (Thread t : batch) {
                    t.join();
                }
            }
        }
        System.out.println("calls=" + done.get());
    }
}
