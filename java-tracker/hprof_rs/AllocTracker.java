/*
 * The class the allocation counts injected by hprof-rs (src/bci/count.rs,
 * heap=sites counted in the bytecode) call. Every `new`, `newarray`,
 * `anewarray` and `multianewarray` of a rewritten class calls one of the
 * three public methods with a site number the agent fixed when it
 * rewrote the class; each bumps that site's counters of objects and bytes.
 *
 * Counters live in pages of SITES_PER_PAGE sites, made on first use. Each
 * page holds STRIPES copies of its counters, one stripe per thread id
 * modulo STRIPES, each stripe a region of its own (so that two threads
 * bumping the same site touch different cache lines), bumped atomically:
 * counts are exact under any contention. The agent reads PAGES through JNI
 * at each dump and sums the stripes. Counters only grow.
 *
 * Instances are counted without their size (their class's instance size
 * is the agent's to find, once per class); arrays with theirs, computed
 * here from the JVM's own array layout (Unsafe.arrayBaseOffset and
 * arrayIndexScale) and the 8-byte object alignment.
 *
 * Bounds: sites numbered past MAX_PAGES * SITES_PER_PAGE (16,777,216) are
 * not counted; a page is 32 KiB of heap (512 sites x 4 stripes x 2 longs).
 *
 * The tracker never throws into the program: every failure (a page that
 * cannot be allocated, no sun.misc.Unsafe) leaves the allocation
 * uncounted and is remembered in `failure` for the agent to report.
 *
 * What the agent must do: define this class in the boot loader and
 * initialise it (a static field lookup does) before any class calling it
 * is loaded; it is never rewritten itself.
 */
package hprof_rs;

import java.lang.reflect.Field;
import sun.misc.Unsafe;

/** Allocation counters bumped by the injected byte code. */
public final class AllocTracker {
    private static final int PAGE_SHIFT = 9;
    private static final int SITES_PER_PAGE = 1 << PAGE_SHIFT;
    private static final int STRIPES = 4;
    private static final int MAX_PAGES = 1 << 15;

    /** Per page: STRIPES regions of SITES_PER_PAGE (objects, bytes) pairs. */
    private static final long[][] PAGES = new long[MAX_PAGES][];
    /** The first failure that left allocations uncounted, for the agent. */
    private static volatile Throwable failure;

    private static final Unsafe U = unsafe();
    private static final long LONG_BASE = U == null ? 0 : U.arrayBaseOffset(long[].class);
    private static final long PAGE_BASE = U == null ? 0 : U.arrayBaseOffset(long[][].class);
    private static final long PAGE_SCALE = U == null ? 0 : U.arrayIndexScale(long[][].class);
    /** Array base offset by element code (log2 of the primitive size, 4: reference). */
    private static final int[] BASE = new int[5];
    /** log2 of the element size by element code. */
    private static final int[] SHIFT = {0, 1, 2, 3, 2};

    static {
        if (U != null) {
            BASE[0] = U.arrayBaseOffset(byte[].class);
            BASE[1] = U.arrayBaseOffset(char[].class);
            BASE[2] = U.arrayBaseOffset(int[].class);
            BASE[3] = U.arrayBaseOffset(long[].class);
            BASE[4] = U.arrayBaseOffset(Object[].class);
            SHIFT[4] = U.arrayIndexScale(Object[].class) == 8 ? 3 : 2;
        }
    }

    private AllocTracker() {}

    private static Unsafe unsafe() {
        try {
            Field field = Unsafe.class.getDeclaredField("theUnsafe");
            field.setAccessible(true);
            return (Unsafe) field.get(null);
        } catch (Throwable t) {
            failure = t;
            return null;
        }
    }

    /** Before `new`: one instance at `site`. */
    public static void object(int site) {
        bump(site, 0);
    }

    /** Before `newarray`/`anewarray`: one array of `length` elements at
     * `siteAndElement >>> 3`, element code `siteAndElement & 7`. */
    public static void array(int length, int siteAndElement) {
        if (length < 0) {
            return; // the allocation throws NegativeArraySizeException
        }
        int element = siteAndElement & 7;
        if (element > 4) {
            return;
        }
        long bytes = (BASE[element] + ((long) length << SHIFT[element]) + 7) & ~7L;
        bump(siteAndElement >>> 3, bytes);
    }

    /** After `multianewarray`: `array` and every array it holds, all new. */
    public static void arrays(Object array, int site) {
        try {
            countTree(array, site);
        } catch (Throwable t) {
            if (failure == null) {
                failure = t;
            }
        }
    }

    private static void countTree(Object array, int site) {
        if (array instanceof Object[]) {
            Object[] elements = (Object[]) array;
            bump(site, size(4, elements.length));
            for (Object element : elements) {
                if (element != null) {
                    countTree(element, site);
                }
            }
        } else if (array instanceof byte[]) {
            bump(site, size(0, ((byte[]) array).length));
        } else if (array instanceof boolean[]) {
            bump(site, size(0, ((boolean[]) array).length));
        } else if (array instanceof char[]) {
            bump(site, size(1, ((char[]) array).length));
        } else if (array instanceof short[]) {
            bump(site, size(1, ((short[]) array).length));
        } else if (array instanceof int[]) {
            bump(site, size(2, ((int[]) array).length));
        } else if (array instanceof float[]) {
            bump(site, size(2, ((float[]) array).length));
        } else if (array instanceof long[]) {
            bump(site, size(3, ((long[]) array).length));
        } else if (array instanceof double[]) {
            bump(site, size(3, ((double[]) array).length));
        }
    }

    private static long size(int element, int length) {
        return (BASE[element] + ((long) length << SHIFT[element]) + 7) & ~7L;
    }

    private static void bump(int site, long bytes) {
        Unsafe u = U;
        int page = site >>> PAGE_SHIFT;
        if (u == null || page >= MAX_PAGES) {
            return;
        }
        long[] counters = PAGES[page];
        if (counters == null && (counters = newPage(u, page)) == null) {
            return;
        }
        int stripe = (int) Thread.currentThread().getId() & (STRIPES - 1);
        long at = LONG_BASE + 16L * ((stripe << PAGE_SHIFT) + (site & (SITES_PER_PAGE - 1)));
        u.getAndAddLong(counters, at, 1);
        if (bytes != 0) {
            u.getAndAddLong(counters, at + 8, bytes);
        }
    }

    /** Page `page`, made now unless another thread made it first. */
    private static long[] newPage(Unsafe u, int page) {
        try {
            long[] fresh = new long[2 * STRIPES * SITES_PER_PAGE];
            long at = PAGE_BASE + PAGE_SCALE * page;
            if (u.compareAndSwapObject(PAGES, at, null, fresh)) {
                return fresh;
            }
            return (long[]) u.getObjectVolatile(PAGES, at);
        } catch (Throwable t) {
            if (failure == null) {
                failure = t;
            }
            return null;
        }
    }
}
