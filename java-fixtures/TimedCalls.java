/**
 * Known call counts for cpu=times: a() runs exactly 12345 times (12000 from
 * a loop, 345 from a recursion of depth 344), b() exactly 777 times (776
 * normal returns and one exit by an exception caught in main), and nap()
 * sleeps 4 x 50 ms, so it has by far the largest self time.
 */
public class TimedCalls {
    static long counter;

    static void a() {
        counter++;
    }

    static void b(int n) {
        if (n < 0) {
            throw new IllegalStateException("out of b");
        }
        counter += n;
    }

    static int recurse(int depth) {
        a();
        return depth == 0 ? 0 : recurse(depth - 1) + 1;
    }

    static void nap() throws InterruptedException {
        Thread.sleep(50);
    }

    public static void main(String[] args) throws Exception {
        for (int i = 0; i < 12000; i++) {
            a();
        }
        recurse(344);
        for (int i = 0; i < 776; i++) {
            b(i);
        }
        try {
            b(-1);
        } catch (IllegalStateException expected) {
            counter++;
        }
        for (int i = 0; i < 4; i++) {
            nap();
        }
        System.out.println("counter=" + counter);
    }
}
