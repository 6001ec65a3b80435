/**
 * A loop whose cost is mostly inside an intrinsic (a large System.arraycopy
 * on one line) beside cheap work on the next: stacks taken at safepoints
 * blame the copy's time on wherever the next safepoint poll is, not on the
 * copy's line. The fixture measures the truth itself: timed() runs the
 * same loop with System.nanoTime() around each line, and `truth_copy_pct=`
 * is the copy's share of the two lines' time, in percent; mixed() runs the
 * loop untimed, in turns with timed() (100 ms each, `seconds` of each in
 * all, default 3), and `rounds=` is how many rounds it ran. The two lines of mixed() end in the comments COPY-LINE and
 * CHEAP-LINE, which the test finds in this file.
 */
public class SafepointBias {
    static final int SIZE = 32 * 1024;
    static final int CHEAP = 2_000;
    static volatile long sink;

    static long mixed(int[] src, int[] dst, long deadline) {
        long x = 1, rounds = 0;
        while (System.nanoTime() < deadline) {
            for (int r = 0; r < 100; r++) {
                System.arraycopy(src, 0, dst, 0, SIZE); // COPY-LINE
                for (int k = 0; k < CHEAP; k++) { x = x * 6364136223846793005L + dst[k]; } // CHEAP-LINE
            }
            rounds++;
        }
        sink = x;
        return rounds;
    }

    /** mixed()'s loop with each line timed: {copy ns, cheap ns}. */
    static long[] timed(int[] src, int[] dst, long deadline) {
        long x = 1, copyNs = 0, cheapNs = 0;
        while (System.nanoTime() < deadline) {
            for (int r = 0; r < 100; r++) {
                long t0 = System.nanoTime();
                System.arraycopy(src, 0, dst, 0, SIZE);
                long t1 = System.nanoTime();
                for (int k = 0; k < CHEAP; k++) { x = x * 6364136223846793005L + dst[k]; }
                long t2 = System.nanoTime();
                copyNs += t1 - t0;
                cheapNs += t2 - t1;
            }
        }
        sink = x;
        return new long[] {copyNs, cheapNs};
    }

    public static void main(String[] args) {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 3;
        int[] src = new int[SIZE];
        int[] dst = new int[SIZE];
        for (int i = 0; i < SIZE; i++) {
            src[i] = i * 7;
        }
        // The truth: the same loop with each line timed, taken in turns with
        // the untimed one (100 ms each), so that both see the same machine.
        timed(src, dst, System.nanoTime() + 300_000_000L);
        long copyNs = 0, cheapNs = 0, rounds = 0;
        for (int turn = 0; turn < seconds * 10; turn++) {
            long[] ns = timed(src, dst, System.nanoTime() + 100_000_000L);
            copyNs += ns[0];
            cheapNs += ns[1];
            rounds += mixed(src, dst, System.nanoTime() + 100_000_000L);
        }
        System.out.println("truth_copy_pct=" + (100.0 * copyNs / (copyNs + cheapNs)));
        System.out.println("rounds=" + rounds);
    }
}
