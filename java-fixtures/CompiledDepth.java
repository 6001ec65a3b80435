/**
 * How deep a warmed-up, compiled recursion gets on threads the program
 * sizes itself (issue #48, item 5): MainDepth's f() (a StackDepth.Node and
 * a helper call per level, a value returned). The main thread first calls
 * f(null, 20) `warm-up` times (default 30,000), so that the JIT compiles
 * it; then, `rounds` times (default 3), a fresh thread made with
 * `new Thread(null, task, name, KiB * 1024)` (default 512 KiB) runs
 * MainDepth.deepest(), f() from 2^30 down until a StackOverflowError.
 * Arguments: warm-up, KiB, rounds. Prints "depth <round> <levels>" per
 * round, "sum=", "min=<levels>" and "max=<levels>".
 */
public class CompiledDepth {
    public static void main(String[] args) throws Exception {
        int warmUp = args.length > 0 ? Integer.parseInt(args[0]) : 30_000;
        long stackKiB = args.length > 1 ? Long.parseLong(args[1]) : 512;
        int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 3;
        long sum = 0;
        for (int i = 0; i < warmUp; i++) {
            sum += MainDepth.f(null, 20);
        }
        int min = Integer.MAX_VALUE;
        int max = 0;
        for (int round = 0; round < rounds; round++) {
            final int[] reached = new int[1];
            Thread t = new Thread(null, () -> reached[0] = MainDepth.deepest(), "deep-" + round,
                    stackKiB * 1024);
            t.start();
            t.join();
            System.out.println("depth " + round + " " + reached[0]);
            min = Math.min(min, reached[0]);
            max = Math.max(max, reached[0]);
        }
        System.out.println("sum=" + sum);
        System.out.println("min=" + min);
        System.out.println("max=" + max);
    }
}
