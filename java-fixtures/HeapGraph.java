/**
 * A known object graph for heap=dump tests, held from static fields so that
 * everything stays reachable until exit.
 *
 * Usage: {@code java HeapGraph [seconds]}: builds the graph, prints
 * {@code vm.info=<java.vm.info>} and {@code READY} (flushed), sleeps
 * {@code seconds} (default 30; 0 = exit at once), prints {@code DONE}.
 *
 * The graph (tests/support/visualvm/HeapCheck.java checks exactly these values):
 * <ul>
 * <li>three {@code HeapGraph$Node} objects n0 -> n1 -> n2 -> n0 (a cycle), from
 *     {@code root} = n0; node k has i = 100 + k, l = 10000000000 + k,
 *     d = 1.5 + k, b = (k even), c = 'a' + k, by = -1 - k, sh = 1000 + k,
 *     f = 0.25 + k, s = "node-k", next, payload = {@code new int[]{k, k * k}}
 *     and the inherited {@code HeapGraph$Base.baseTag} = 7 * (k + 1);</li>
 * <li>exactly {@link #LEAVES} = 1234 {@code HeapGraph$Leaf} objects (id = index),
 *     in {@code leaves} ({@code HeapGraph$Leaf[]} of length 1234);</li>
 * <li>object arrays with nulls in the middle and at the end:
 *     {@code slots} = {n0, null, "slot-two", null, null},
 *     {@code nodes} = {n0, n1, n2, null} ({@code HeapGraph$Node[]}),
 *     {@code empty} = new Object[3] (all null);</li>
 * <li>one primitive array of each type with known contents (below);</li>
 * <li>primitive and String statics: label, big, count, ratio, flag, letter, tiny, small, fraction.</li>
 * </ul>
 */
public class HeapGraph {
    /** A superclass, so that instances carry an inherited field. Never instantiated alone. */
    static class Base {
        int baseTag;
    }

    /** Fields of every kind. */
    static final class Node extends Base {
        int i;
        long l;
        double d;
        boolean b;
        char c;
        byte by;
        short sh;
        float f;
        String s;
        Node next;
        int[] payload;
    }

    /** Many of these, for instance-count checks. */
    static final class Leaf {
        final int id;

        Leaf(int id) {
            this.id = id;
        }
    }

    static final int LEAVES = 1234;

    static String label = "heap-graph";
    static long big = 1234567890123L;
    static int count = 42;
    static double ratio = 2.5;
    static boolean flag = true;
    static char letter = 'Z';
    static byte tiny = -7;
    static short small = 12345;
    static float fraction = 0.75f;

    static Node root;
    static Node[] nodes;
    static Object[] slots;
    static Object[] empty;
    static Leaf[] leaves;

    static int[] numbers;
    static long[] longs;
    static double[] doubles;
    static float[] floats;
    static boolean[] booleans;
    static char[] chars;
    static byte[] bytes;
    static short[] shorts;

    static Node node(int k) {
        Node n = new Node();
        n.baseTag = 7 * (k + 1);
        n.i = 100 + k;
        n.l = 10_000_000_000L + k;
        n.d = 1.5 + k;
        n.b = k % 2 == 0;
        n.c = (char) ('a' + k);
        n.by = (byte) (-1 - k);
        n.sh = (short) (1000 + k);
        n.f = 0.25f + k;
        n.s = "node-" + k;
        n.payload = new int[] {k, k * k};
        return n;
    }

    static void build() {
        Node n0 = node(0);
        Node n1 = node(1);
        Node n2 = node(2);
        n0.next = n1;
        n1.next = n2;
        n2.next = n0;
        root = n0;
        nodes = new Node[] {n0, n1, n2, null};
        slots = new Object[] {n0, null, "slot-two", null, null};
        empty = new Object[3];
        leaves = new Leaf[LEAVES];
        for (int k = 0; k < LEAVES; k++) {
            leaves[k] = new Leaf(k);
        }
        numbers = new int[] {1, -2, 3, Integer.MAX_VALUE, Integer.MIN_VALUE};
        longs = new long[] {Long.MIN_VALUE, 0L, 1234567890123L};
        doubles = new double[] {0.5, -1.25, 1e300};
        floats = new float[] {1.5f, -2.75f};
        booleans = new boolean[] {true, false, true};
        chars = new char[] {'h', 'p', 'r', 'o', 'f'};
        bytes = new byte[] {-128, 0, 127};
        shorts = new short[] {-32768, 7, 32767};
    }

    public static void main(String[] args) throws InterruptedException {
        int seconds = args.length > 0 ? Integer.parseInt(args[0]) : 30;
        build();
        // "mixed mode, sharing" when class data sharing is in use.
        System.out.println("vm.info=" + System.getProperty("java.vm.info"));
        System.out.println("READY");
        System.out.flush();
        if (seconds > 0) {
            Thread.sleep(seconds * 1000L);
        }
        System.out.println("DONE");
        System.out.flush();
    }
}
