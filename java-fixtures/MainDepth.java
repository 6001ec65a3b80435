/**
 * How deep a recursion gets on the main thread, whose stack the java
 * launcher sizes before any agent loads (under the modes that rewrite code
 * the agent runs main() on a thread with three times that stack). f() allocates a StackDepth.Node and calls a helper at every level and
 * returns a value, as a recursive evaluator does. Argument: shallow calls
 * of f() made first (default 0), so that the deep one runs compiled. Runs
 * f() deep three times, each until a StackOverflowError, and prints
 * "depth <round> <levels>" per round and "min=<levels>", "max=<levels>".
 */
public class MainDepth {
    static final int START = 1 << 30;

    static int lowest;

    static int weigh(StackDepth.Node node) {
        return node.level & 7;
    }

    static int f(StackDepth.Node parent, int n) {
        if (n == 0) {
            return 0;
        }
        lowest = n;
        StackDepth.Node node = new StackDepth.Node(parent, n);
        return weigh(node) + f(node, n - 1);
    }

    static int deepest() {
        lowest = START;
        try {
            return f(null, START);
        } catch (StackOverflowError expected) {
            return START - lowest;
        }
    }

    public static void main(String[] args) {
        int warmUp = args.length > 0 ? Integer.parseInt(args[0]) : 0;
        long sum = 0;
        for (int i = 0; i < warmUp; i++) {
            sum += f(null, 20);
        }
        int min = Integer.MAX_VALUE;
        int max = 0;
        for (int round = 0; round < 3; round++) {
            int levels = deepest();
            System.out.println("depth " + round + " " + levels);
            min = Math.min(min, levels);
            max = Math.max(max, levels);
        }
        System.out.println("sum=" + sum);
        System.out.println("min=" + min);
        System.out.println("max=" + max);
    }
}
