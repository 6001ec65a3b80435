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
