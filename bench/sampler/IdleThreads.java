/**
 * Per-tick cost of cpu=samples with many idle threads: starts N daemon
 * threads that sleep (default 500) and one thread that computes for the
 * given number of seconds (default 10), then prints a checksum.
 *
 * Usage: IdleThreads [IDLE_THREADS] [SECONDS]
 */
public final class IdleThreads {
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        int idle = args.length > 0 ? Integer.parseInt(args[0]) : 500;
        long seconds = args.length > 1 ? Long.parseLong(args[1]) : 10;
        for (int i = 0; i < idle; i++) {
            Thread t = new Thread(() -> {
                try {
                    Thread.sleep(Long.MAX_VALUE);
                } catch (InterruptedException e) {
                    // not expected
                }
            }, "idle-" + i);
            t.setDaemon(true);
            t.start();
        }
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        long x = 1;
        while (System.nanoTime() < end) {
            for (int i = 0; i < 1_000_000; i++) {
                x = x * 6364136223846793005L + 1442695040888963407L;
            }
        }
        sink = x;
        System.out.println("checksum=" + (sink != 0));
    }
}
