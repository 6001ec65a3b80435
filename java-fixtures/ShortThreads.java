import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * Many threads that each burn a little CPU and end: args[0] threads (default
 * 2000), each spinning until its own CPU clock has advanced args[1] ms
 * (default 8), two at a time. Prints "cpu_ms=<total>" on stdout: the CPU the
 * threads spent spinning, measured on each thread's own CPU clock.
 */
public class ShortThreads {
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        int threads = args.length > 0 ? Integer.parseInt(args[0]) : 2000;
        long burnNanos = (args.length > 1 ? Long.parseLong(args[1]) : 8) * 1_000_000L;
        ThreadMXBean bean = ManagementFactory.getThreadMXBean();
        long[] spent = new long[threads];
        for (int i = 0; i < threads; i += 2) {
            Thread[] pair = new Thread[Math.min(2, threads - i)];
            for (int j = 0; j < pair.length; j++) {
                int index = i + j;
                pair[j] = new Thread(() -> spent[index] = burn(bean, burnNanos), "short-" + index);
                pair[j].start();
            }
            for (Thread t : pair) {
                t.join();
            }
        }
        long total = 0;
        for (long s : spent) {
            total += s;
        }
        System.out.println("cpu_ms=" + total / 1_000_000L);
    }

    static long burn(ThreadMXBean bean, long nanos) {
        long start = bean.getCurrentThreadCpuTime();
        long x = 1;
        long now;
        do {
            for (int k = 0; k < 10_000; k++) {
                x = x * 6364136223846793005L + 1442695040888963407L;
            }
            sink = x;
            now = bean.getCurrentThreadCpuTime();
        } while (now - start < nanos);
        return now - start;
    }
}
