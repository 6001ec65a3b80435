/**
 * How deep a recursion gets before its stack overflows, with and without
 * the agent's rewriting (every frame of a rewritten method carries the
 * calling-context locals and stack slots). Each of ROUNDS rounds runs on a
 * fresh thread with a stack of the given size and recurses through descend(), which
 * allocates a Node and calls a helper at every level, as a recursive-descent
 * parser does; the first round runs mostly interpreted, the later ones
 * compiled. Arguments: rounds (default 12), stack KiB (default 1024), and
 * "virtual" to recurse on a virtual thread instead (JDK 21+, reached
 * through reflection; its frames live on its carrier thread's stack, whose
 * size the JVM chooses, so the stack KiB are then unused).
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

    static int oneRound(long stackBytes, boolean virtual) throws Exception {
        final int[] reached = new int[1];
        Runnable task = () -> {
            try {
                descend(null, 0);
            } catch (StackOverflowError expected) {
                reached[0] = deepest;
            }
        };
        Thread t;
        if (virtual) {
            Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
            t = (Thread) Class.forName("java.lang.Thread$Builder")
                    .getMethod("start", Runnable.class).invoke(builder, task);
        } else {
            t = new Thread(null, task, "descend", stackBytes);
            t.start();
        }
        t.join();
        return reached[0];
    }

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : ROUNDS;
        long stackKiB = args.length > 1 ? Long.parseLong(args[1]) : STACK_KIB;
        boolean virtual = args.length > 2 && args[2].equals("virtual");
        int min = Integer.MAX_VALUE;
        int max = 0;
        for (int round = 0; round < rounds; round++) {
            int levels = oneRound(stackKiB * 1024, virtual);
            System.out.println("depth " + round + " " + levels);
            min = Math.min(min, levels);
            max = Math.max(max, levels);
        }
        System.out.println("min=" + min);
        System.out.println("max=" + max);
    }
}
