package bcitest;

import java.util.Map;
import java.util.TreeMap;

/**
 * Tracker for tests/bci_run.rs: counts CallSite and ReturnSite per
 * (class number, method number), and a leaf's LeafSite as both. A leaf
 * keeps what leafStart() returned in a local of its own and passes it to
 * LeafSite: a value other than LEAF_START there (a wrong local) counts a
 * return without its call, which the test sees. Never instrumented itself (the rewriter
 * leaves the tracker class alone), and it only calls JDK code, which that
 * test does not rewrite, so it cannot recurse.
 */
public final class CountingTracker {
    private static final Map<String, long[]> COUNTS = new TreeMap<>();

    private CountingTracker() {}

    private static synchronized long[] counts(int cnum, int mnum) {
        return COUNTS.computeIfAbsent(cnum + " " + mnum, k -> new long[2]);
    }

    public static void CallSite(int cnum, int mnum) {
        counts(cnum, mnum)[0]++;
    }

    public static void ReturnSite(int cnum, int mnum) {
        counts(cnum, mnum)[1]++;
    }

    private static final long LEAF_START = 0x5EED_0000_0000_0001L;

    public static long leafStart() {
        return LEAF_START;
    }

    public static void LeafSite(int cnum, int mnum, long start) {
        long[] counts = counts(cnum, mnum);
        if (start == LEAF_START) {
            counts[0]++;
        }
        counts[1]++;
    }

    /** Prints "COUNT <cnum> <mnum> <calls> <returns>" for every method called. */
    public static synchronized void dump() {
        for (Map.Entry<String, long[]> e : COUNTS.entrySet()) {
            System.out.println("COUNT " + e.getKey() + " " + e.getValue()[0] + " " + e.getValue()[1]);
        }
    }
}
