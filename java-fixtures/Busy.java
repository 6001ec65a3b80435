/**
 * Keeps one CPU busy for args[0] milliseconds (default 1000) by calling
 * work() in a loop, then prints "checksum=<n>". work() always returns the
 * same value, so the checksum does not depend on how many calls fit in the
 * time; the number of calls is printed on a second line.
 */
public class Busy {
    static volatile long sink;

    static long work() {
        long acc = 17;
        for (int i = 0; i < 10_000; i++) {
            acc = acc * 31 + (i ^ (acc >>> 7));
        }
        return acc;
    }

    static long spin(long millis) {
        long deadline = System.nanoTime() + millis * 1_000_000L;
        long calls = 0;
        do {
            sink = work();
            calls++;
        } while (System.nanoTime() < deadline);
        return calls;
    }

    public static void main(String[] args) {
        long millis = args.length > 0 ? Long.parseLong(args[0]) : 1000;
        long calls = spin(millis);
        System.out.println("checksum=" + sink);
        System.out.println("calls=" + calls);
    }
}
