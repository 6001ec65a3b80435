package filtered.lib.deep;

/** The innermost package of FilterMain's calls. */
public class FilterDeep {
    public static long inc(long n) {
        return n + 1;
    }

    public static long check(int i) {
        if (i < 0) {
            throw new IllegalArgumentException("negative: " + i);
        }
        return i;
    }
}
