package bcitest;

import java.util.Map;
import java.util.TreeMap;

/**
 * Tracker for tests/bci_run.rs: counts CallSite and ReturnSite per
 * (class number, method number). Never instrumented itself (the rewriter
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

    /** Prints "COUNT <cnum> <mnum> <calls> <returns>" for every method called. */
    public static synchronized void dump() {
        for (Map.Entry<String, long[]> e : COUNTS.entrySet()) {
            System.out.println("COUNT " + e.getKey() + " " + e.getValue()[0] + " " + e.getValue()[1]);
        }
    }
}
