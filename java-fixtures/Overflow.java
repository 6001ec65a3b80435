/**
 * cpu=times after a caught StackOverflowError: five times over, dive()
 * recurses until the stack overflows and main catches the error, then
 * counted() runs exactly 1000 times, so counted() completes exactly 5000
 * calls in all. An overflow may strike inside the profiler's own code; the
 * thread must still be timed afterwards.
 */
public class Overflow {
    static long depth;
    static long counter;

    static void dive() {
        depth++;
        dive();
    }

    static void counted() {
        counter++;
    }

    public static void main(String[] args) {
        for (int round = 0; round < 5; round++) {
            try {
                dive();
            } catch (StackOverflowError expected) {
                depth = 0;
            }
            for (int i = 0; i < 1000; i++) {
                counted();
            }
        }
        System.out.println("counter=" + counter);
    }
}
