import java.lang.reflect.Array;
import java.lang.reflect.Constructor;

/**
 * Known allocation counts for heap=sites: 10000 Item objects, 10000 int[16]
 * arrays and 10000 Reflected objects made through reflection, each from one
 * place; 6000 of each are dropped before a System.gc(), so 4000 stay live.
 * Expected sizes with compressed class pointers (any heap below 32 GB):
 * Item 24 bytes, int[16] 80 bytes, Reflected 16 bytes.
 * Also 1000 clones of one Cloned object and 1000 long[4] arrays made by
 * Array.newInstance, all kept.
 *
 * With the argument "big" it instead allocates 20,000,000 int[16] arrays
 * (1.6 GB in all, none kept) from makeArray, for checking sampled estimates.
 *
 * With the argument "large" it allocates 30 byte[8 MiB] arrays from
 * makeLarge and keeps 10 of them (large arrays are tracked without tags in
 * sampled mode; their live count comes from a census at each dump).
 */
public class AllocSites {
    static final int COUNT = 10000;
    static final int DROPPED = 6000;

    static final class Item {
        int a;
        long b;
    }

    static final class Reflected {
        int x;
    }

    static final class Cloned implements Cloneable {
        int v;

        Cloned copy() throws CloneNotSupportedException {
            return (Cloned) clone();
        }
    }

    static final int OTHERS = 1000;
    static final int BIG = 20_000_000;

    static Item[] items = new Item[COUNT];
    static int[][] arrays = new int[COUNT][];
    static Reflected[] reflected = new Reflected[COUNT];

    static Item makeItem() {
        return new Item();
    }

    static int[] makeArray() {
        return new int[16];
    }

    static Object makeReflectArray() {
        return Array.newInstance(long.class, 4);
    }

    static byte[] makeLarge() {
        return new byte[8 << 20];
    }

    static final int LARGE = 30;
    static final int LARGE_KEPT = 10;
    static byte[][] large = new byte[LARGE_KEPT][];
    static volatile byte[] largeSink;

    static Object[] others = new Object[2 * OTHERS];
    static volatile int[] sink;

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("big")) {
            long sum = 0;
            for (int i = 0; i < BIG; i++) {
                // Stored in a volatile field so the JIT cannot elide the allocation.
                sink = makeArray();
                sum += sink.length;
            }
            System.out.println("allocated " + BIG + " int[16], sum " + sum);
            return;
        }
        if (args.length > 0 && args[0].equals("large")) {
            for (int i = 0; i < LARGE; i++) {
                byte[] a = makeLarge();
                if (i % 3 == 0) {
                    large[i / 3] = a;
                } else {
                    largeSink = a;
                }
            }
            largeSink = null;
            System.gc();
            System.out.println("allocated " + LARGE + " byte[8 MiB], kept " + LARGE_KEPT);
            return;
        }
        Constructor<Reflected> constructor = Reflected.class.getDeclaredConstructor();
        for (int i = 0; i < COUNT; i++) {
            items[i] = makeItem();
            arrays[i] = makeArray();
            reflected[i] = constructor.newInstance();
        }
        for (int i = 0; i < DROPPED; i++) {
            items[i] = null;
            arrays[i] = null;
            reflected[i] = null;
        }
        Cloned prototype = new Cloned();
        for (int i = 0; i < OTHERS; i++) {
            others[i] = prototype.copy();
            others[OTHERS + i] = makeReflectArray();
        }
        System.gc();
        System.out.println("allocated " + COUNT + " of each, kept " + (COUNT - DROPPED));
    }
}
