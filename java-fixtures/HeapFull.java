import java.util.ArrayList;

/**
 * Ends with an uncaught OutOfMemoryError while the heap stays full: a static
 * list keeps everything, in small pieces, so even the JVM's shutdown finds
 * no memory (run it with a small -Xmx, e.g. 32m).
 */
public class HeapFull {
    static final ArrayList<Object> KEPT = new ArrayList<>();

    public static void main(String[] args) {
        System.out.println("filling the heap");
        while (true) {
            KEPT.add(new long[16]);
        }
    }
}
