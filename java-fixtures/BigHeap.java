/**
 * Keeps args[0] MB (default 64) of byte arrays alive, prints "held", then
 * ends normally: a heap dump of it is at least that large.
 *
 * With args[1] = S, it then starts short threads one after another (named
 * "churn-N") for S seconds before it ends, and prints "started=N": a heap
 * dump asked for meanwhile (SIGQUIT) runs while threads start and end.
 */
public class BigHeap {
    static byte[][] held;

    public static void main(String[] args) throws InterruptedException {
        int mb = args.length > 0 ? Integer.parseInt(args[0]) : 64;
        held = new byte[mb][];
        for (int i = 0; i < mb; i++) {
            held[i] = new byte[1 << 20];
            held[i][i] = (byte) i;
        }
        System.out.println("held");
        if (args.length > 1) {
            long end = System.nanoTime() + Long.parseLong(args[1]) * 1_000_000_000L;
            int started = 0;
            while (System.nanoTime() < end) {
                Thread t = new Thread(() -> {}, "churn-" + started);
                t.start();
                t.join();
                started++;
            }
            System.out.println("started=" + started);
        }
    }
}
