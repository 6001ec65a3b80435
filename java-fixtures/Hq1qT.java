/**
 * The template {@link OddName} defines again as a class named {@code H(1)T}
 * (its bytes with every "Hq1qT" replaced): run as that class, it keeps
 * {@link #KEPT} instances of itself and spins in {@link #spin} for about
 * half a second of CPU.
 */
public class Hq1qT implements Runnable {
    static final int KEPT = 5000;
    static Hq1qT[] kept;

    int id;

    @Override
    public void run() {
        kept = new Hq1qT[KEPT];
        for (int i = 0; i < KEPT; i++) {
            Hq1qT made = new Hq1qT();
            made.id = i;
            kept[i] = made;
        }
        System.out.println("spin=" + spin(500));
    }

    /** Arithmetic for {@code millis} ms of wall time; returns a checksum. */
    static long spin(long millis) {
        long end = System.nanoTime() + millis * 1_000_000L;
        long x = 1;
        while (System.nanoTime() < end) {
            for (int i = 0; i < 10_000; i++) {
                x = x * 6364136223846793005L + 1442695040888963407L;
            }
        }
        return x;
    }
}
