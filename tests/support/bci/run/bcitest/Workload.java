package bcitest;

import java.lang.reflect.Field;
import java.util.function.IntSupplier;

/**
 * Methods with known call and return counts for tests/bci_run.rs, which
 * rewrites these classes and checks the counts exactly (the expected table
 * is there). "Workload count" runs and prints CountingTracker's counts;
 * "Workload plain" just runs; "Workload engage" engages the real
 * hprof_rs.Tracker, whose natives nobody registered; "Workload reset"
 * resets it in the middle of a timed call. Every mode prints
 * "RESULT <text>", the same whether rewritten or not.
 */
public class Workload {
    static int counter;
    static int finallies;

    static {
        counter = 1;
    }

    public static void main(String[] args) throws Exception {
        if (args[0].equals("engage")) {
            engageRealTracker();
            return;
        }
        if (args[0].equals("reset")) {
            resetRealTracker();
            return;
        }
        System.out.println("RESULT " + run());
        if (args[0].equals("count")) {
            CountingTracker.dump();
        }
    }

    static String run() {
        StringBuilder out = new StringBuilder();
        out.append(fib(10)).append(' ');
        out.append(catcher(10)).append(' ');
        for (int k = 0; k < 6; k++) {
            out.append(dense(k)).append(sparse(k * 500));
        }
        out.append(' ').append(tryFinally(3)).append(tryFinally(-3)).append(finallies);
        Derived d = new Derived(true);
        Derived e = new Derived(false);
        out.append(' ').append(d.value + e.value).append(new Base(counter > 0 ? 1 : 2).value);
        Shape s = Shape.square();
        out.append(' ').append(s.sides()).append(s.name());
        IntSupplier next = () -> counter++;
        for (int i = 0; i < 3; i++) {
            out.append(next.getAsInt());
        }
        out.append(' ').append(sync(5)).append(syncBlock(out, 6));
        out.append(' ').append(wide(7L, 2.5)).append(spin(5));
        return out.toString();
    }

    static int fib(int n) {
        return n < 2 ? n : fib(n - 1) + fib(n - 2);
    }

    static void thrower(int i) {
        if (i % 2 == 0) {
            throw new IllegalStateException("even");
        }
    }

    static int catcher(int n) {
        int caught = 0;
        for (int i = 0; i < n; i++) {
            try {
                thrower(i);
            } catch (IllegalStateException e) {
                caught++;
            }
        }
        return caught;
    }

    static char dense(int k) {
        switch (k) {
            case 0:
                return 'a';
            case 1:
                return 'b';
            case 2:
                return 'c';
            case 3:
                return 'd';
            default:
                return 'z';
        }
    }

    static char sparse(int k) {
        switch (k) {
            case 0:
                return 'A';
            case 1000:
                return 'B';
            case 2000:
                return 'C';
            default:
                return 'Z';
        }
    }

    static long tryFinally(int k) {
        try {
            if (k > 0) {
                return k;
            }
            return -k;
        } finally {
            finallies++;
        }
    }

    static synchronized int sync(int x) {
        return x * 2;
    }

    static int syncBlock(Object lock, int x) {
        synchronized (lock) {
            return x + 1;
        }
    }

    static double wide(long a, double b) {
        return a * b;
    }

    /** Its loop starts at offset 0: jumping back must not count a call. */
    static int spin(int n) {
        while (true) {
            if (--n <= 0) {
                return n;
            }
        }
    }

    static class Base {
        final int value;

        Base(int value) {
            this.value = value;
        }
    }

    /** Branches before super(): stack map frames with uninitializedThis. */
    static final class Derived extends Base {
        Derived(boolean big) {
            super(big ? 10 : 20);
        }
    }

    interface Shape {
        int sides();

        default String name() {
            return "shape" + sides();
        }

        static Shape square() {
            return new Square();
        }
    }

    static final class Square implements Shape {
        @Override
        public int sides() {
            return 4;
        }
    }

    /**
     * With the real tracker engaged, instrumented calls are timed in Java:
     * the result is unchanged and the tracker reports the completed calls.
     */
    static void engageRealTracker() throws Exception {
        Class<?> tracker = Class.forName("hprof_rs.Tracker");
        Field engaged = tracker.getDeclaredField("engaged");
        engaged.setAccessible(true);
        engaged.setInt(null, 1);
        int result;
        try {
            result = fib(10);
        } finally {
            engaged.setInt(null, 0);
        }
        System.out.println("RESULT timed fib(10)=" + result + " calls=" + drainedCalls(tracker));
    }

    /** drain()'s completed calls, all traces together. */
    static long drainedCalls(Class<?> tracker) throws Exception {
        java.lang.reflect.Method drain = tracker.getDeclaredMethod("drain");
        drain.setAccessible(true);
        // Per trace: owner, node, calls, self ns, total ns.
        long[] data = (long[]) ((Object[]) drain.invoke(null))[2];
        long calls = 0;
        for (int at = 0; at + 5 <= data.length; at += 5) {
            calls += data[at + 2];
        }
        return calls;
    }

    /**
     * What an agent attached again does to the Tracker an earlier profile
     * left: reset() between two engaged spans, inside spanning(), a call
     * the second span sees end but never saw begin.
     */
    static void resetRealTracker() throws Exception {
        Class<?> tracker = Class.forName("hprof_rs.Tracker");
        Field engaged = tracker.getDeclaredField("engaged");
        engaged.setAccessible(true);
        engaged.setInt(null, 1);
        long[] before = new long[1];
        int result = spanning(tracker, engaged, before);
        engaged.setInt(null, 0);
        System.out.println("RESULT reset fib(10)=" + result + " before=" + before[0]
                + " after=" + drainedCalls(tracker));
    }

    static int spanning(Class<?> tracker, Field engaged, long[] before) throws Exception {
        int result = fib(10);
        engaged.setInt(null, 0);
        before[0] = drainedCalls(tracker);
        java.lang.reflect.Method reset = tracker.getDeclaredMethod("reset");
        reset.setAccessible(true);
        reset.invoke(null);
        engaged.setInt(null, 1);
        return result + fib(10);
    }
}
