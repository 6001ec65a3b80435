/**
 * Allocations whose stacks are known, for exact heap=sites traces:
 *
 *   - Leaf:       N at the bottom of a 50-deep recursion:
 *                 leaf <- descend <- descend <- descend ...
 *   - Thrown:     N in a method left by an exception, two calls below the catch:
 *                 thrower <- deeper <- catcher <- main
 *   - AfterCatch: N after each catch, in the catching method:
 *                 catcher <- main (main is the thread's first Java frame)
 *   - Shared:     N on each of two threads, through two different callers:
 *                 shared <- viaA <- PathA.run <- (Thread's method that runs it)
 *                 shared <- viaB <- PathB.run <- (the same)
 *   - LazyMade:   N in a method of a class that the first call loads (the class
 *                 loader runs between the call and the method):
 *                 Lazy.make <- main
 *
 * Usage: java AllocTraces [n]   (default 1000)
 */
public class AllocTraces {
    static final int DEPTH = 50;
    static volatile Object sink;

    static class Leaf {}
    static class Thrown {}
    static class AfterCatch {}
    static class Shared {}
    static class LazyMade {}

    static final class Lazy {
        static Object make() {
            return new LazyMade();
        }
    }

    static void descend(int depth) {
        if (depth == 0) {
            leaf();
            return;
        }
        descend(depth - 1);
    }

    static void leaf() {
        sink = new Leaf();
    }

    static void thrower() {
        sink = new Thrown();
        throw new IllegalStateException("unwinds through deeper");
    }

    static void deeper() {
        thrower();
    }

    static void catcher() {
        try {
            deeper();
        } catch (IllegalStateException expected) {
            // unwound through thrower and deeper
        }
        sink = new AfterCatch();
    }

    static void shared() {
        sink = new Shared();
    }

    static void viaA() {
        shared();
    }

    static void viaB() {
        shared();
    }

    static final class PathA implements Runnable {
        final int n;

        PathA(int n) {
            this.n = n;
        }

        @Override
        public void run() {
            for (int i = 0; i < n; i++) {
                viaA();
            }
        }
    }

    static final class PathB implements Runnable {
        final int n;

        PathB(int n) {
            this.n = n;
        }

        @Override
        public void run() {
            for (int i = 0; i < n; i++) {
                viaB();
            }
        }
    }

    public static void main(String[] args) throws InterruptedException {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 1000;
        for (int i = 0; i < n; i++) {
            sink = Lazy.make();
        }
        for (int i = 0; i < n; i++) {
            descend(DEPTH);
        }
        for (int i = 0; i < n; i++) {
            catcher();
        }
        Thread a = new Thread(new PathA(n), "path-a");
        Thread b = new Thread(new PathB(n), "path-b");
        a.start();
        b.start();
        a.join();
        b.join();
        System.out.println("traced " + n + " of each");
    }
}
