import java.util.ArrayList;

/**
 * Ends with an uncaught OutOfMemoryError: keeps allocating 800 KB arrays
 * until the heap (run it with a small -Xmx, e.g. 32m) is full.
 */
public class OutOfMemory {
    public static void main(String[] args) {
        ArrayList<long[]> kept = new ArrayList<>();
        System.out.println("filling the heap");
        while (true) {
            kept.add(new long[100_000]);
        }
    }
}
