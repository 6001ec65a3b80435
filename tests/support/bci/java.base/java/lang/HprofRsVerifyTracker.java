package java.lang;

/**
 * Test stand-in for hprof_rs.Tracker, patched into java.base (package
 * java.lang, which every module reads) so that a JVM whose whole module image
 * was rewritten by tests/bci_jrt.rs can run. Counts calls while engaged;
 * it must call nothing instrumented, or it would recurse.
 */
public final class HprofRsVerifyTracker {
    /** Non-zero while counting. */
    public static volatile int engaged;
    /** CallSite calls while engaged (racy across threads: a rough count). */
    public static long calls;
    /** ReturnSite calls while engaged. */
    public static long returns;

    private HprofRsVerifyTracker() {}

    public static void CallSite(int cnum, int mnum) {
        if (engaged != 0) {
            calls++;
        }
    }

    public static void ReturnSite(int cnum, int mnum) {
        if (engaged != 0) {
            returns++;
        }
    }

    /** A leaf's entry: the value its end passes back. */
    public static long leafStart() {
        return 1;
    }

    /** A leaf's end: a call and its return. */
    public static void LeafSite(int cnum, int mnum, long start) {
        if (engaged != 0) {
            calls++;
            returns++;
        }
    }
}
