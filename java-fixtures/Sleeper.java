/**
 * Prints READY (flushed), sleeps for args[0] seconds (default 30) in short
 * naps, then prints DONE. Tests wait for READY, then send SIGTERM or SIGQUIT.
 */
public class Sleeper {
    public static void main(String[] args) throws InterruptedException {
        int seconds = args.length > 0 ? Integer.parseInt(args[0]) : 30;
        System.out.println("READY");
        System.out.flush();
        long deadline = System.nanoTime() + seconds * 1_000_000_000L;
        while (System.nanoTime() < deadline) {
            nap();
        }
        System.out.println("DONE");
        System.out.flush();
    }

    static void nap() throws InterruptedException {
        Thread.sleep(20);
    }
}
