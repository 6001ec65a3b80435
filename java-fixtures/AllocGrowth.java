/**
 * Two allocation sites with known counts, one of which grows by a given
 * percentage: makeArray allocates 20000 * (100 + percent) / 100 int[64]
 * arrays (272 bytes each with compressed class pointers), makeItem always
 * 10000 Item objects (24 bytes each). None are kept.
 *
 * The argument is the growth in percent (default 0), so that two runs
 * compare a program before and after a change that allocates more at one site.
 */
public class AllocGrowth {
    static final int ARRAYS = 20000;
    static final int ITEMS = 10000;

    static final class Item {
        int a;
        long b;
    }

    static volatile Object sink;

    static int[] makeArray() {
        return new int[64];
    }

    static Item makeItem() {
        return new Item();
    }

    public static void main(String[] args) {
        int percent = args.length > 0 ? Integer.parseInt(args[0]) : 0;
        int arrays = ARRAYS * (100 + percent) / 100;
        for (int i = 0; i < arrays; i++) {
            sink = makeArray();
        }
        for (int i = 0; i < ITEMS; i++) {
            sink = makeItem();
        }
        System.out.println("allocated " + arrays + " int[64] and " + ITEMS + " Item");
    }
}
