import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;

/**
 * CPU work done in virtual threads (JDK 21+, reached through reflection):
 * `tasks` virtual threads (default 8) each run spin() for `ms` ms of wall
 * time (default 400), never blocking (named spinner-0, spinner-1, ...), so that while spin() runs its carrier
 * thread's CPU is spin()'s. Prints `spin_ms=` (the wall time all spin()s
 * ran) and `carrier_cpu_ms=` (the CPU the virtual-thread scheduler's
 * carrier threads, ForkJoinPool-*-worker-*, used in all: spin() plus the
 * scheduler's own work), then `checksum=`, which does not depend on timing
 * (each spin() counts its rounds of a fixed computation only to report them).
 * With the argument `many <n>` instead: n short virtual threads (100,000 in
 * the tests) that each do a little work; prints `tasks=<n>`.
 */
public class VirtualSpin {
    static volatile long sink;

    static long spin(long ms) {
        long end = System.nanoTime() + ms * 1_000_000L;
        long x = 1, rounds = 0;
        while (System.nanoTime() < end) {
            for (int i = 0; i < 10_000; i++) {
                x = x * 6364136223846793005L + 1442695040888963407L;
                x ^= x >>> 29;
            }
            rounds++;
        }
        sink = x;
        return rounds;
    }

    static ExecutorService virtualExecutor() throws Exception {
        return (ExecutorService) Executors.class
                .getMethod("newVirtualThreadPerTaskExecutor")
                .invoke(null);
    }

    /** Virtual threads named prefix0, prefix1, ..., one per task. */
    static ExecutorService namedVirtualExecutor(String prefix) throws Exception {
        Class<?> builderType = Class.forName("java.lang.Thread$Builder");
        Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
        builder = builderType.getMethod("name", String.class, long.class)
                .invoke(builder, prefix, 0L);
        ThreadFactory factory = (ThreadFactory) builderType.getMethod("factory").invoke(builder);
        return (ExecutorService) Executors.class
                .getMethod("newThreadPerTaskExecutor", ThreadFactory.class)
                .invoke(null, factory);
    }

    static long carrierCpuNs() {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long total = 0;
        for (ThreadInfo info : threads.dumpAllThreads(false, false)) {
            if (info.getThreadName().startsWith("ForkJoinPool-")) {
                long cpu = threads.getThreadCpuTime(info.getThreadId());
                if (cpu > 0) {
                    total += cpu;
                }
            }
        }
        return total;
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("many")) {
            int n = args.length > 1 ? Integer.parseInt(args[1]) : 100_000;
            ExecutorService pool = virtualExecutor();
            for (int i = 0; i < n; i++) {
                final int seed = i;
                pool.execute(() -> {
                    long x = seed;
                    for (int k = 0; k < 200; k++) {
                        x = x * 31 + k;
                    }
                    sink = x;
                });
            }
            pool.shutdown();
            pool.awaitTermination(1, TimeUnit.HOURS);
            System.out.println("tasks=" + n);
            return;
        }
        int tasks = args.length > 0 ? Integer.parseInt(args[0]) : 8;
        long ms = args.length > 1 ? Long.parseLong(args[1]) : 400;
        long before = carrierCpuNs();
        long[] spinNs = new long[tasks];
        ExecutorService pool = namedVirtualExecutor("spinner-");
        for (int t = 0; t < tasks; t++) {
            final int index = t;
            pool.execute(() -> {
                long start = System.nanoTime();
                spin(ms);
                spinNs[index] = System.nanoTime() - start;
            });
        }
        pool.shutdown();
        pool.awaitTermination(1, TimeUnit.HOURS);
        long carrier = carrierCpuNs() - before;
        long spinTotal = 0;
        for (long ns : spinNs) {
            spinTotal += ns;
        }
        System.out.println("spin_ms=" + spinTotal / 1_000_000);
        System.out.println("carrier_cpu_ms=" + carrier / 1_000_000);
        System.out.println("checksum=" + tasks);
    }
}
