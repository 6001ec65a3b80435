import java.io.File;

/**
 * A long-running, busy and allocating program for the net= tests: a front
 * end sends it commands while it runs.
 *
 * <p>Usage: {@code java NetServer [exit-code] [seconds]}: builds HeapGraph's
 * object graph (which prints its own lines), allocates 100
 * {@code NetServer$Once} (kept, never allocated again), prints
 * {@code SERVING} (flushed), then until a file named {@code stop} appears in
 * the working directory or {@code seconds} (default 60) have passed: calls
 * {@code allocate()} (one {@code NetServer$Chunk} and its {@code long[8]},
 * the last 1024 kept) and {@code spin()} (CPU work) in turn. Then prints
 * {@code STOPPED} and ends with {@code System.exit(exit-code)} (default 0).
 */
public class NetServer {
    static final class Once {
        final int id;

        Once(int id) {
            this.id = id;
        }
    }

    static final class Chunk {
        final long[] data = new long[8];
    }

    static final Object[] kept = new Object[1024];
    static Once[] onces;
    static volatile long sink;

    static Chunk allocate() {
        return new Chunk();
    }

    static long spin() {
        long acc = 17;
        for (int i = 0; i < 20_000; i++) {
            acc = acc * 31 + (i ^ (acc >>> 7));
        }
        return acc;
    }

    public static void main(String[] args) throws Exception {
        int code = args.length > 0 ? Integer.parseInt(args[0]) : 0;
        long seconds = args.length > 1 ? Long.parseLong(args[1]) : 60;
        HeapGraph.main(new String[] {"0"});
        onces = new Once[100];
        for (int i = 0; i < onces.length; i++) {
            onces[i] = new Once(i);
        }
        System.out.println("SERVING");
        System.out.flush();
        File stop = new File("stop");
        long deadline = System.nanoTime() + seconds * 1_000_000_000L;
        long n = 0;
        while (!stop.exists() && System.nanoTime() < deadline) {
            for (int i = 0; i < 100; i++) {
                kept[(int) (n++ & 1023)] = allocate();
                sink = spin();
            }
        }
        System.out.println("STOPPED");
        System.out.flush();
        System.exit(code);
    }
}
