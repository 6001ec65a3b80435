/**
 * A long-running program to attach to: for `seconds` (default 10) it runs
 * rounds of `hot()` (a loop that is most of its CPU) and `allocate()`
 * (1000 `AttachTarget$Item` per round, kept until the next round). Every
 * round computes the same values, so what it prints does not depend on how
 * many rounds ran: `READY` (flushed) once the first round is done, then at
 * the end `result=<hot's value>` and `items=<the last round's sum>`; it exits
 * with code 42.
 */
public class AttachTarget {
    static final int ITEMS = 1000;
    static final long SPINS = 2_000_000;
    static Item[] kept = new Item[0];

    static final class Item {
        final long value;
        Item(long value) {
            this.value = value;
        }
    }

    static long hot() {
        long x = 7;
        for (long i = 0; i < SPINS; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            x ^= x >>> 31;
        }
        return x;
    }

    static long allocate() {
        Item[] items = new Item[ITEMS];
        long sum = 0;
        for (int i = 0; i < ITEMS; i++) {
            items[i] = new Item(i);
            sum += items[i].value;
        }
        kept = items;
        return sum;
    }

    public static void main(String[] args) {
        long seconds = args.length > 0 ? Long.parseLong(args[0]) : 10;
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        long result = hot();
        long items = allocate();
        System.out.println("READY");
        System.out.flush();
        while (System.nanoTime() < end) {
            result = hot();
            items = allocate();
        }
        System.out.println("result=" + result);
        System.out.println("items=" + items);
        System.exit(42);
    }
}
