package filtered.lib;

import filtered.lib.deep.FilterDeep;

/** The middle package of FilterMain's calls. */
public class FilterLib {
    public static long twice(int i) {
        return FilterDeep.inc(2L * i);
    }

    /** FilterDeep.check(i), whose exception for i < 0 is caught here. */
    public static long guarded(int i) {
        try {
            return FilterDeep.check(i);
        } catch (IllegalArgumentException expected) {
            return 7;
        }
    }

    /** A nested class: a pattern naming FilterLib takes it in. */
    public static class Half {
        public static long half(int i) {
            return FilterDeep.inc(i / 2);
        }
    }
}
