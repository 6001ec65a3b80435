import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;

/**
 * Known CPU shares for cpu=samples: thread "hot-a" does three times the work
 * of thread "hot-b" (hotA runs 3 x UNITS rounds, hotB runs UNITS rounds of the
 * same loop), while twenty daemon threads stay blocked the whole time: seven
 * in ServerSocket.accept, seven in Thread.sleep and six in Object.wait. The
 * optional argument sets UNITS (default 20).
 */
public class CpuHot {
    static final int ROUND = 25_000_000;
    static final Object LOCK = new Object();
    static volatile long sink;

    // hotA and hotB run the same loop, so that their work differs only in
    // the number of rounds; the loop is written out in each so that the
    // method itself is the top frame of every sample.
    static void hotA(int units) {
        long x = 1;
        for (long i = 0; i < 3L * units * ROUND; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            x ^= x >>> 29;
        }
        sink = x;
    }

    static void hotB(int units) {
        long x = 2;
        for (long i = 0; i < (long) units * ROUND; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            x ^= x >>> 29;
        }
        sink = x;
    }

    static Thread daemon(String name, Runnable body) {
        Thread t = new Thread(body, name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    public static void main(String[] args) throws Exception {
        int units = args.length > 0 ? Integer.parseInt(args[0]) : 20;
        ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        for (int i = 0; i < 7; i++) {
            daemon("accept-" + i, () -> {
                try (Socket s = server.accept()) {
                    sink += s.getPort();
                } catch (Exception e) {
                    // closed at exit
                }
            });
            daemon("sleep-" + i, () -> {
                try {
                    Thread.sleep(3_600_000L);
                } catch (InterruptedException e) {
                    // not expected
                }
            });
        }
        for (int i = 0; i < 6; i++) {
            daemon("wait-" + i, () -> {
                synchronized (LOCK) {
                    try {
                        LOCK.wait();
                    } catch (InterruptedException e) {
                        // not expected
                    }
                }
            });
        }
        Thread a = new Thread(() -> hotA(units), "hot-a");
        Thread b = new Thread(() -> hotB(units), "hot-b");
        a.start();
        b.start();
        a.join();
        b.join();
        System.out.println("done " + (sink != 0));
    }
}
