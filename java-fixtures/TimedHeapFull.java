/**
 * A program that fills its heap to the last bytes (catching its own
 * OutOfMemoryErrors), then, with the heap still full, takes the 8192 new
 * call paths of Paths (allocating nothing itself), then lets the heap go.
 * It succeeds alone; a profiler that needs memory for each new trace must
 * fail quietly, not throw into it.
 */
public class TimedHeapFull {
    public static void main(String[] args) {
        Paths.walk(0, 0); // Paths loaded and linked before the heap is full.
        java.util.List<Object> hog = new java.util.ArrayList<>();
        for (int size = 1 << 20; size >= 16; size /= 4) {
            try {
                while (true) {
                    hog.add(new byte[size]);
                }
            } catch (OutOfMemoryError full) {
                // Next, smaller pieces.
            }
        }
        for (int bits = 0; bits < 1 << Paths.LEVELS; bits++) {
            Paths.walk(Paths.LEVELS, bits);
        }
        int pieces = hog.size();
        hog = null;
        System.out.println("pieces>0=" + (pieces > 0) + " counter=" + (Paths.counter - 1));
    }
}
