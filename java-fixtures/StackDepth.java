/**
 * How deep a recursion gets before its stack overflows, with and without
 * the agent's rewriting (every frame of a rewritten method carries the
 * calling-context locals and stack slots). Each of ROUNDS rounds runs on a
 * fresh thread with a stack of the given size and recurses through descend(), which
 * allocates a Node and calls a helper at every level, as a recursive-descent
 * parser does; the first round runs mostly interpreted, the later ones
 * compiled. Arguments: rounds (default 12), stack KiB (default 1024).
 * Prints "depth <round> <levels>" per round and "min=<levels>",
 * "max=<levels>".
 */
public class StackDepth {
    static final int ROUNDS = 12;
    static final long STACK_KIB = 1024;

    static final class Node {
        final Node parent;
        final int level;

        Node(Node parent, int level) {
            this.parent = parent;
            this.level = level;
        }
    }

    static int deepest;
    static long sink;

    static int weigh(Node node) {
        return node.level & 7;
    }

    static void descend(Node parent, int level) {
        Node node = new Node(parent, level);
        deepest = level;
        sink += weigh(node);
        descend(node, level + 1);
    }

    static int oneRound(long stackBytes) throws InterruptedException {
        final int[] reached = new int[1];
        Thread t = new Thread(null, () -> {
            try {
                descend(null, 0);
            } catch (StackOverflowError expected) {
                reached[0] = deepest;
            }
        }, "descend", stackBytes);
        t.start();
        t.join();
        return reached[0];
    }

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : ROUNDS;
        long stackKiB = args.length > 1 ? Long.parseLong(args[1]) : STACK_KIB;
        int min = Integer.MAX_VALUE;
        int max = 0;
        for (int round = 0; round < rounds; round++) {
            int levels = oneRound(stackKiB * 1024);
            System.out.println("depth " + round + " " + levels);
            min = Math.min(min, levels);
            max = Math.max(max, levels);
        }
        System.out.println("min=" + min);
        System.out.println("max=" + max);
    }
}
