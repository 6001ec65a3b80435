/**
 * Objects that all die: 40,000 {@code int[7]} made in {@code main}, each used once (the JIT's
 * escape analysis may remove those of compiled code; they are counted all the same), none kept.
 * Prints {@code sink=280000}.
 */
public class DeadArrays {
    public static void main(String[] args) {
        long sink = 0;
        for (int i = 0; i < 40_000; i++) {
            sink += new int[7].length;
        }
        System.out.println("sink=" + sink);
    }
}
