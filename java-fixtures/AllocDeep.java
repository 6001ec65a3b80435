/**
 * Allocation sites deep in the stack and on two threads, for heap=sites'
 * traces of more than 4 frames and its rows per thread (thread=y). Every
 * object is kept, so every one is live at the dump.
 *
 * <ul>
 *   <li>{@code leaf()}: 20,000 {@code Leaf}, each reached through a 10-deep
 *       chain: main, chain, c1 ... c10, leaf (13 frames).
 *   <li>{@code bottom()}: 5,000 {@code Bottom}, at the end of a recursion of
 *       100 levels of {@code down} (more than 64 frames).
 *   <li>{@code part()}: threads "small" and "large" make 3,000 and 7,000
 *       {@code Part} at once, through the same frames (Maker.run, fill,
 *       part).
 * </ul>
 *
 * With {@code estimated}, the same threads first let 16 MiB of byte[] go
 * (past the live sample's exact start), then make 2,000,000 and 6,000,000
 * {@code Part} at once, none kept but the last of each.
 */
public class AllocDeep {
    static final class Leaf {
        int v;
    }

    static final class Bottom {
        int v;
    }

    static final class Part {
        int v;
    }

    static final int LEAVES = 20_000;
    static final int BOTTOMS = 5_000;
    static final int LEVELS = 100;
    static final Object[] leaves = new Object[LEAVES];
    static final Object[] bottoms = new Object[BOTTOMS];
    static final Object[] small = new Object[3_000];
    static final Object[] large = new Object[7_000];
    static int made;
    static volatile Object last;

    static Leaf leaf() {
        return new Leaf();
    }

    static void c10() {
        leaves[made++] = leaf();
    }

    static void c9() {
        c10();
    }

    static void c8() {
        c9();
    }

    static void c7() {
        c8();
    }

    static void c6() {
        c7();
    }

    static void c5() {
        c6();
    }

    static void c4() {
        c5();
    }

    static void c3() {
        c4();
    }

    static void c2() {
        c3();
    }

    static void c1() {
        c2();
    }

    static void chain() {
        for (int i = 0; i < LEAVES; i++) {
            c1();
        }
    }

    static Bottom bottom() {
        return new Bottom();
    }

    static void down(int level) {
        if (level == 0) {
            for (int i = 0; i < BOTTOMS; i++) {
                bottoms[i] = bottom();
            }
        } else {
            down(level - 1);
        }
    }

    static Part part() {
        return new Part();
    }

    static void fill(Object[] into, int count) {
        for (int i = 0; i < count; i++) {
            Part p = part();
            if (into != null) {
                into[i] = p;
            } else {
                last = p;
            }
        }
    }

    /** One Runnable class for both threads, so that their frames are the same. */
    static final class Maker implements Runnable {
        private final Object[] into;
        private final int count;

        Maker(Object[] into, int count) {
            this.into = into;
            this.count = count;
        }

        @Override
        public void run() {
            fill(into, count);
        }
    }

    /** Threads "small" and "large" making `small` and `large` Parts at once. */
    static void onTwoThreads(Object[] intoSmall, int small, Object[] intoLarge, int large)
            throws InterruptedException {
        Thread a = new Thread(new Maker(intoSmall, small), "small");
        Thread b = new Thread(new Maker(intoLarge, large), "large");
        a.start();
        b.start();
        a.join();
        b.join();
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("estimated")) {
            for (int i = 0; i < 16 * 1024; i++) {
                last = new byte[1024];
            }
            onTwoThreads(null, 2_000_000, null, 6_000_000);
            System.out.println("made 2000000 and 6000000 Part");
            return;
        }
        chain();
        down(LEVELS);
        onTwoThreads(small, small.length, large, large.length);
        System.out.println("kept " + made + " Leaf, " + BOTTOMS + " Bottom, 10000 Part");
    }
}
