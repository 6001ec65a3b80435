/**
 * One allocation site reached from two callers, well past heap=sites' live
 * sample's exact first 8 MiB: n (default 1,000,000) long[4] arrays of 48
 * bytes from make(), three of every four through viaA(), the fourth through
 * viaB(), interleaved, none kept. Prints the counts it made.
 */
public class AllocSplit {
    static volatile long[] sink;

    static long[] make() {
        return new long[4];
    }

    static void viaA() {
        sink = make();
    }

    static void viaB() {
        sink = make();
    }

    static volatile int[] lateSink;

    static int[] late() {
        return new int[2];
    }

    static void lateCaller() {
        lateSink = late();
    }

    public static void main(String[] args) {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
        int b = 0;
        for (int i = 0; i < n; i++) {
            if (i % 4 == 3) {
                viaB();
                b++;
            } else {
                viaA();
            }
        }
        for (int i = 0; i < 100; i++) {
            lateCaller();
        }
        System.out.println("viaA " + (n - b) + " viaB " + b + " late 100");
    }
}
