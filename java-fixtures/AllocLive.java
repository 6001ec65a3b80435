/**
 * Live columns of one class allocated at two sites: keepMost makes 10000
 * Node objects and keeps 9000, dropMost makes 10000 and keeps 1000, then a
 * System.gc(). Exact live counts per site: 9000 and 1000 (the class's 10000
 * live objects are not shared in proportion to what each site allocated).
 *
 * With the argument "after <megabytes>" it first allocates that many
 * megabytes of byte[1024] garbage (from makeGarbage), so that the counting
 * happens late in a bigger program, and each site makes 400 times more
 * (4,000,000 each; 3,600,000 and 400,000 kept).
 *
 * With the argument "no-gc" it leaves the System.gc() out: the dropped
 * Nodes are then garbage still in the heap at exit, which the live columns
 * must not count.
 */
public class AllocLive {
    static final class Node {
        int a;
        long b;
    }

    static Node[] kept;
    static volatile byte[] garbage;

    static Node keepMostNode() {
        return new Node();
    }

    static Node dropMostNode() {
        return new Node();
    }

    static void makeGarbage(long megabytes) {
        for (long i = 0; i < megabytes * 1024; i++) {
            garbage = new byte[1024];
        }
    }

    public static void main(String[] args) {
        int scale = 1;
        if (args.length == 2 && args[0].equals("after")) {
            makeGarbage(Long.parseLong(args[1]));
            scale = 400;
        }
        int count = 10000 * scale;
        kept = new Node[count];
        int next = 0;
        for (int i = 0; i < count; i++) {
            Node n = keepMostNode();
            if (i % 10 != 0) {
                kept[next++] = n;
            }
        }
        for (int i = 0; i < count; i++) {
            Node n = dropMostNode();
            if (i % 10 == 0) {
                kept[next++] = n;
            }
        }
        if (!(args.length == 1 && args[0].equals("no-gc"))) {
            System.gc();
        }
        System.out.println("kept " + next);
    }
}
