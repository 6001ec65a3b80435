/**
 * Holds objects whose shallow sizes are known, for the class histogram of
 * a heap dump against {@code jmap -histo:live} of the same heap. With
 * compressed class pointers and references (HotSpot's default on 64 bits):
 * <ul>
 * <li>200,000 {@code HeapSizes$Point} (two ints: 12 + 8 = 20, 24 bytes);</li>
 * <li>100,000 {@code HeapSizes$Mixed} (a long, a byte, a short and a reference:
 *     12 + 15 = 27, 32 bytes);</li>
 * <li>50,000 {@code HeapSizes$Sub}, whose superclass {@code HeapSizes$Base}
 *     declares an int (12 + 4 + 8 + 4 = 28, 32 bytes);</li>
 * <li>1,000 {@code int[1000]} (16 + 4000 = 4016 bytes), 600 {@code long[500]}
 *     (4016), 1,500 {@code char[333]} (16 + 666 = 682, 688);</li>
 * <li>60,000 Strings "v0" ... "v59999", each with its own {@code byte[]};</li>
 * <li>the arrays that hold them: {@code HeapSizes$Point[200000]} (800,016),
 *     {@code HeapSizes$Mixed[100000]} (400,016), {@code HeapSizes$Sub[50000]}
 *     (200,016), {@code String[60000]}, {@code int[][1000]}...</li>
 * </ul>
 * Prints {@code READY} (flushed), then sleeps {@code seconds} (default 60)
 * without making anything, so that the heap stays as it is while a test
 * takes its histograms and dumps.
 */
public class HeapSizes {
    static class Point {
        int x;
        int y;
    }

    static class Mixed {
        long l;
        byte b;
        short s;
        Object ref;
    }

    static class Base {
        int a;
    }

    static class Sub extends Base {
        long b;
        Object o;
    }

    static Point[] points = new Point[200_000];
    static Mixed[] mixed = new Mixed[100_000];
    static Sub[] subs = new Sub[50_000];
    static int[][] ints = new int[1_000][];
    static long[][] longs = new long[600][];
    static char[][] chars = new char[1_500][];
    static String[] strings = new String[60_000];

    public static void main(String[] args) throws InterruptedException {
        int seconds = args.length > 0 ? Integer.parseInt(args[0]) : 60;
        for (int i = 0; i < points.length; i++) {
            points[i] = new Point();
        }
        for (int i = 0; i < mixed.length; i++) {
            mixed[i] = new Mixed();
        }
        for (int i = 0; i < subs.length; i++) {
            subs[i] = new Sub();
        }
        for (int i = 0; i < ints.length; i++) {
            ints[i] = new int[1_000];
        }
        for (int i = 0; i < longs.length; i++) {
            longs[i] = new long[500];
        }
        for (int i = 0; i < chars.length; i++) {
            chars[i] = new char[333];
        }
        for (int i = 0; i < strings.length; i++) {
            strings[i] = "v" + i;
        }
        System.out.println("READY");
        System.out.flush();
        Thread.sleep(seconds * 1000L);
    }
}
