import java.util.function.Supplier;

/**
 * Makes exactly 40,000 MethodRefAlloc$Made objects through a constructor
 * reference (Supplier<Made> make = Made::new): the `new` is in the lambda's
 * class, which the JDK generates when the reference is first used and
 * defines as a hidden class. All of them stay reachable from a static to
 * the end (live = allocated). Prints "made 40000".
 */
public class MethodRefAlloc {
    static final class Made { int v; }

    static final int COUNT = 40_000;
    static Made[] kept;

    public static void main(String[] args) {
        Supplier<Made> make = Made::new;
        kept = new Made[COUNT];
        for (int i = 0; i < COUNT; i++) {
            kept[i] = make.get();
        }
        System.out.println("made " + kept.length);
    }
}
