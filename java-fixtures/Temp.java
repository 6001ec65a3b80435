/**
 * Short-lived allocations beside a large live set, the case where HPROF's
 * cutoff hides most of what a program allocates: CALLS (1,000,000) calls
 * each make one byte[SIZE] in temp() (SIZE the first argument, default
 * 100: 120 bytes each with compressed class pointers; 200: 216 bytes), at
 * the bottom of a chain of LEVELS (20) calls of level(), and drop it at
 * once, while KEPT (100) long[125000] made in keep(), 100 MB, stay live to
 * the end. Under the default cutoff (0.0001 of the live bytes, 10 KB here)
 * the temp() site, with no live array, is not a SITES row.
 *
 * Why 100 MB and long[]: heap=sites' default estimates how a class's live
 * objects split among the sites that make it, and puts a dozen or so live
 * byte[]s the JVM makes late in the run (no sample placed them) at temp(),
 * the class's biggest allocator: 2.6-4.1 KB at byte[200], which 20 MB of
 * live objects would not outweigh.
 */
public class Temp {
    static final int CALLS = 1_000_000;
    static final int LEVELS = 20;
    static final int KEPT = 100;
    static final int KEPT_LENGTH = 125_000;

    static final long[][] kept = new long[KEPT][];
    static long sum;

    static long[] keep() {
        return new long[KEPT_LENGTH];
    }

    static byte[] temp(int size) {
        return new byte[size];
    }

    static void level(int n, int size) {
        if (n > 0) {
            level(n - 1, size);
            return;
        }
        byte[] made = temp(size);
        made[0] = 1;
        sum += made.length + made[size - 1];
    }

    public static void main(String[] args) {
        int size = args.length > 0 ? Integer.parseInt(args[0]) : 100;
        // System.out's buffers are made at its first line, here, before
        // the program's first 8 MiB.
        System.out.println(new StringBuilder("size=").append(size));
        for (int i = 0; i < KEPT; i++) {
            kept[i] = keep();
        }
        for (int i = 0; i < CALLS; i++) {
            level(LEVELS, size);
        }
        // No string concatenation (javac makes it an invokedynamic, whose
        // bootstrap here would leave live byte[]s that heap=sites' default
        // estimates may place at temp()).
        StringBuilder done = new StringBuilder("calls=").append(CALLS);
        done.append(" sum=").append(sum);
        System.out.println(done.append(" kept=").append(kept.length));
    }
}
