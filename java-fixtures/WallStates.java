import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.concurrent.locks.ReentrantLock;

/**
 * cpu=wall's fixture with a known answer: the thread "wall-worker" goes
 * round a fixed schedule, cycle after cycle, of about 30 ms computing,
 * 20 ms in Thread.sleep, 20 ms blocked entering a monitor another thread
 * holds, 15 ms parked on a ReentrantLock another thread holds and 15 ms
 * reading a loopback socket whose peer answers late. It measures each
 * part itself with System.nanoTime and prints its shares of its own life
 * ("running" being all the rest):
 *
 *   WallStates shares: running=30.1 native=15.2 blocked=19.9 waiting=15.0 sleeping=19.8
 *
 * Usage: WallStates [cycles [go|now [blocked-ms]]] (defaults 40, now, 20).
 * With "go" it prints READY and waits for a line on its standard input
 * before it starts, so that a profile attached meanwhile sees the worker's
 * whole life; blocked-ms is how long the monitor is held against it.
 */
public class WallStates {
    static final Object MONITOR = new Object();
    static final ReentrantLock LOCK = new ReentrantLock();
    static volatile int holderHas;
    static volatile int lockerHas;
    static volatile boolean done;
    static volatile long blockedMs = 20;

    public static void main(String[] args) throws Exception {
        int cycles = args.length > 0 ? Integer.parseInt(args[0]) : 40;
        if (args.length > 2) {
            blockedMs = Long.parseLong(args[2]);
        }
        if (args.length > 1 && args[1].equals("go")) {
            System.out.println("READY");
            System.out.flush();
            new java.io.BufferedReader(new java.io.InputStreamReader(System.in)).readLine();
        }
        ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        Thread peer = new Thread(() -> answerLate(server), "wall-peer");
        peer.setDaemon(true);
        peer.start();
        Thread holder = new Thread(WallStates::holdMonitor, "wall-holder");
        Thread locker = new Thread(WallStates::holdLock, "wall-locker");
        holder.setDaemon(true);
        locker.setDaemon(true);
        holder.start();
        locker.start();
        long[] spent = new long[5];
        Thread worker = new Thread(() -> work(cycles, server.getLocalPort(), spent), "wall-worker");
        worker.start();
        worker.join();
        done = true;
        long life = spent[0];
        String[] names = {"native", "blocked", "waiting", "sleeping"};
        StringBuilder line = new StringBuilder("WallStates shares:");
        long others = 0;
        for (int i = 1; i < 5; i++) {
            others += spent[i];
        }
        line.append(String.format(" running=%.1f", 100.0 * (life - others) / life));
        for (int i = 1; i < 5; i++) {
            line.append(String.format(" %s=%.1f", names[i - 1], 100.0 * spent[i] / life));
        }
        System.out.println(line);
    }

    /** spent: [0] the worker's life, then native, blocked, waiting, sleeping (ns). */
    static void work(int cycles, int port, long[] spent) {
        long born = System.nanoTime();
        try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), port)) {
            socket.setTcpNoDelay(true);
            InputStream in = socket.getInputStream();
            OutputStream out = socket.getOutputStream();
            long sink = 0;
            for (int cycle = 0; cycle < cycles; cycle++) {
                sink += compute(30);

                long t = System.nanoTime();
                Thread.sleep(20);
                spent[4] += System.nanoTime() - t;

                holderHas = 1; // the holder takes the monitor, then says so with 2
                while (holderHas != 2) {
                    Thread.onSpinWait();
                }
                t = System.nanoTime();
                synchronized (MONITOR) {
                    spent[2] += System.nanoTime() - t;
                }

                lockerHas = 1;
                while (lockerHas != 2) {
                    Thread.onSpinWait();
                }
                t = System.nanoTime();
                LOCK.lock();
                spent[3] += System.nanoTime() - t;
                LOCK.unlock();

                out.write(1);
                out.flush();
                t = System.nanoTime();
                if (in.read() < 0) {
                    throw new IllegalStateException("peer closed");
                }
                spent[1] += System.nanoTime() - t;
            }
            if (sink == 42) {
                System.out.println("unlikely");
            }
        } catch (Exception e) {
            throw new RuntimeException(e);
        }
        spent[0] = System.nanoTime() - born;
    }

    /** Runs for about `ms` milliseconds. */
    static long compute(long ms) {
        long end = System.nanoTime() + ms * 1_000_000L;
        long x = 0;
        while (System.nanoTime() < end) {
            for (int i = 0; i < 1000; i++) {
                x = x * 31 + i;
            }
        }
        return x;
    }

    static void holdMonitor() {
        while (!done) {
            if (holderHas != 1) {
                sleepQuietly(1);
                continue;
            }
            synchronized (MONITOR) {
                holderHas = 2;
                sleepQuietly(blockedMs);
            }
        }
    }

    static void holdLock() {
        while (!done) {
            if (lockerHas != 1) {
                sleepQuietly(1);
                continue;
            }
            LOCK.lock();
            try {
                lockerHas = 2;
                sleepQuietly(15);
            } finally {
                LOCK.unlock();
            }
        }
    }

    static void answerLate(ServerSocket server) {
        try (Socket socket = server.accept()) {
            socket.setTcpNoDelay(true);
            InputStream in = socket.getInputStream();
            OutputStream out = socket.getOutputStream();
            while (in.read() >= 0) {
                sleepQuietly(15);
                out.write(2);
                out.flush();
            }
        } catch (Exception e) {
            if (!done) {
                throw new RuntimeException(e);
            }
        }
    }

    static void sleepQuietly(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
