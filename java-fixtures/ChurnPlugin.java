/**
 * The class {@link ClassChurn} defines again and again, each time in a fresh
 * class loader: every copy has the same bytes.
 */
public class ChurnPlugin {
    /** A small object, allocated at one site. */
    static final class Piece {
        final int value;

        Piece(int value) {
            this.value = value;
        }
    }

    /** Makes {@code n} Pieces at one site (ChurnPlugin.java, line 19) and sums them. */
    public static long make(int n) {
        long sum = 0;
        for (int i = 0; i < n; i++) {
            Piece p = new Piece(i);
            sum += p.value;
        }
        return sum;
    }
}
