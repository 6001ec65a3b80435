/**
 * Known call counts for cpu=times timed from samples: work() runs exactly
 * 300 times, 200 from left() (called twice) and 100 from right(), each call
 * the same 3,000,000 rounds of arithmetic (a few ms of CPU), so that both of
 * its traces are sampled often and in the ratio 2:1; tick() runs exactly
 * 1,000,000 times, each call too short to be seen by a sample. The optional
 * argument multiplies the rounds.
 */
public class SampledCalls {
    static long rounds = 3_000_000;
    static long sink;
    static long ticks;

    static void work() {
        long x = sink | 1;
        for (long i = 0; i < rounds; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            x ^= x >>> 29;
        }
        sink = x;
    }

    static void left() {
        for (int i = 0; i < 100; i++) {
            work();
        }
    }

    static void right() {
        for (int i = 0; i < 100; i++) {
            work();
        }
    }

    static void tick() {
        ticks++;
    }

    public static void main(String[] args) {
        if (args.length > 0) {
            rounds *= Long.parseLong(args[0]);
        }
        left();
        right();
        left();
        for (int i = 0; i < 1_000_000; i++) {
            tick();
        }
        System.out.println("ticks=" + ticks + " done " + (sink != 0));
    }
}
