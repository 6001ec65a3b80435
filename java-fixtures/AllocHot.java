/**
 * `AllocHot [n] [more]`: a hot loop making `n` (default 2,000,000) small
 * objects and `n` two-element arrays, each used once and dropped: long
 * enough for C2 to compile it (with on-stack replacement). Compiled, escape
 * analysis can take the objects out, and C2 (JDK 15 and later) drops the
 * arrays, whose one read it answers from the initialising store. Prints
 * `sum=<n(n-1)/2 + n>`. With `more`, two more loops of `n`: `boxes`, an
 * `Integer.valueOf` of a value past the cache, only unboxed (prints
 * `boxes=`), and `concat`, a StringBuilder chain whose String is only
 * measured (prints `chars=`).
 */
public class AllocHot {
    static final class Item {
        final int a;

        Item(int a) {
            this.a = a;
        }
    }

    static long loop(int n) {
        long s = 0;
        for (int i = 0; i < n; i++) {
            Item it = new Item(i);
            int[] pair = {i, 1};
            s += it.a + pair[1];
        }
        return s;
    }

    static long boxes(int n) {
        long s = 0;
        for (int i = 0; i < n; i++) {
            Integer box = Integer.valueOf(i + 1000);
            s += box;
        }
        return s;
    }

    static long concat(int n) {
        long s = 0;
        for (int i = 0; i < n; i++) {
            String text = new StringBuilder().append('x').append(i).toString();
            s += text.length();
        }
        return s;
    }

    public static void main(String[] args) {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 2_000_000;
        System.out.println("sum=" + loop(n));
        if (args.length > 1 && args[1].equals("more")) {
            System.out.println("boxes=" + boxes(n));
            System.out.println("chars=" + concat(n));
        }
    }
}
