import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * One method hot through several traces, another hot through one: hot()
 * spends its time in three leaves (leafA, leafB, leafC, two units of work
 * each), single() does four units itself. HPROF's CPU SAMPLES table, one
 * row per trace, ranks single() first (40% against 20% per leaf); aggregated
 * by method, hot() has 60% in total. The margins are wide because a
 * one-second run takes about a hundred samples on a loaded machine: at 33%
 * against 22% (three units), one leaf drew 35 samples to single()'s 34 by
 * chance alone. No lambdas, so every frame name is stable.
 *
 * Rounds of hot() and single() repeat until the main thread has used the
 * CPU milliseconds given as the argument (default 1000): cpu=samples counts
 * only threads that run, so CPU time, not wall time, sets the sample count
 * on a loaded machine.
 */
public class SpreadHot {
    static final long UNIT = 2_000_000;
    static volatile long sink;

    static void leafA() {
        long x = 1;
        for (long i = 0; i < 2 * UNIT; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
        }
        sink += x;
    }

    static void leafB() {
        long x = 2;
        for (long i = 0; i < 2 * UNIT; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
        }
        sink += x;
    }

    static void leafC() {
        long x = 3;
        for (long i = 0; i < 2 * UNIT; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
        }
        sink += x;
    }

    static void hot() {
        leafA();
        leafB();
        leafC();
    }

    static void single() {
        long x = 4;
        for (long i = 0; i < 4 * UNIT; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
        }
        sink += x;
    }

    public static void main(String[] args) {
        long millis = args.length > 0 ? Long.parseLong(args[0]) : 1000;
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long end = threads.getCurrentThreadCpuTime() + millis * 1_000_000;
        int rounds = 0;
        // The thread's CPU clock is slow to read on some JDKs: it is read
        // only every 20 ms of wall time (System.nanoTime is cheap), so that
        // it takes no visible share of the samples.
        long nextCheck = 0;
        while (true) {
            hot();
            single();
            rounds++;
            long now = System.nanoTime();
            if (now >= nextCheck) {
                if (threads.getCurrentThreadCpuTime() >= end) {
                    break;
                }
                nextCheck = now + 20_000_000;
            }
        }
        System.out.println("done " + rounds + " rounds");
    }
}
