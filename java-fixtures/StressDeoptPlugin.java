/**
 * Loaded by Stress "deopt" into many class loaders (java.lang only): each
 * copy's loop is compiled while it sees only Integer, then deoptimized when
 * a Long comes.
 */
public class StressDeoptPlugin {
    public static long total(Number[] numbers, int repeat) {
        long sum = 0;
        for (int r = 0; r < repeat; r++) {
            for (Number n : numbers) {
                sum += n.longValue();
            }
        }
        return sum;
    }
}
