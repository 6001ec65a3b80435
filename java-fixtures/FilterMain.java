package filtered.app;

import filtered.lib.FilterLib;

/**
 * cpu=times include=/exclude= over three packages: filtered.app (this
 * class), filtered.lib (FilterLib, FilterLib$Half) and filtered.lib.deep
 * (FilterDeep). Known calls: main 1, step 1000, FilterLib.twice 1000,
 * FilterLib$Half.half 500, FilterDeep.inc 1500 (from twice and half),
 * FilterLib.guarded 1 and FilterDeep.check 1, which throws, caught in
 * guarded. Prints total=<n>, the same with and without the agent.
 */
public class FilterMain {
    static long total;

    static void step(int i) {
        total += FilterLib.twice(i);
        if (i % 2 == 0) {
            total += FilterLib.Half.half(i);
        }
    }

    public static void main(String[] args) {
        total += FilterLib.guarded(-1);
        for (int i = 0; i < 1000; i++) {
            step(i);
        }
        System.out.println("total=" + total);
    }
}
