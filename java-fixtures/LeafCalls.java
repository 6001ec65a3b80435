/**
 * Leaves under cpu=times: methods that call no other, which the agent
 * times with one call into its tracker at their end instead of one at each
 * end. spin() is a leaf that takes time: outer() calls it 3 times and does
 * almost nothing itself, so spin() must hold nearly all of their self time.
 * at() is a leaf called 1000 times that returns and once more that is left
 * by an ArrayIndexOutOfBoundsException (caught in main): 1001 calls. No
 * lambdas, so every frame name is stable.
 */
public class LeafCalls {
    static long sink;

    static long spin(long rounds) {
        long x = rounds;
        for (long i = 0; i < rounds; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
        }
        return x;
    }

    static void outer(long rounds) {
        for (int i = 0; i < 3; i++) {
            sink += spin(rounds);
        }
    }

    static int at(int[] values, int index) {
        return values[index];
    }

    public static void main(String[] args) {
        outer(args.length > 0 ? Long.parseLong(args[0]) : 60_000_000L);
        int[] values = new int[10];
        for (int i = 0; i < 1000; i++) {
            values[i % 10] = i;
            sink += at(values, i % 10);
        }
        try {
            sink += at(values, 10);
        } catch (ArrayIndexOutOfBoundsException expected) {
            sink++;
        }
        System.out.println("done " + (sink != 0));
    }
}
