import java.lang.reflect.Field;
import sun.misc.Unsafe;

/**
 * The counters the prototype's injected calls bump (on the boot class path, so that java.base
 * can call it). Modes:
 *   racy    - counts[site]++ and bytes on one shared array (lost updates between threads: the
 *             floor of any counter)
 *   atomic  - the same slots bumped with Unsafe.getAndAddLong (exact, shared cache lines)
 *   striped - exact, a stripe of slots per thread (thread id modulo 16), atomic within it
 *   context - striped, and every call site keeps a calling-context value per thread (v = 3v +
 *             site before the call, undone after: 3 is odd, so the step is invertible mod 2^64)
 *             in a slot chosen by thread id, which a count would then be keyed by
 *   frame   - (see AllocCountersAgent) counts keyed by (site, calling-context window) in an
 *             open-addressing table of 4M keys, inserted with a compare-and-set
 *   empty   - the calls are injected and return at once (what the calls cost, not the counting)
 *   rewrite - (the agent's mode) classes are rewritten by ASM with nothing injected
 */
public final class AllocCounters {
    private static final int SITES = 1 << 20;
    private static final int STRIPES = 16;
    private static final long[] COUNTS = new long[SITES * 2 * STRIPES];
    private static final long[] CONTEXT = new long[1 << 16];
    private static final long INVERSE_OF_3 = 0xAAAAAAAAAAAAAAABL;
    private static final Unsafe U = unsafe();
    private static final long BASE = U == null ? 0 : U.arrayBaseOffset(long[].class);
    private static int mode; // 0 racy, 1 atomic, 2 striped, 3 context, 4 empty

    public static void setMode(String name) {
        mode = name.equals("racy") ? 0 : name.equals("atomic") ? 1 : name.equals("striped") ? 2
                : name.equals("context") ? 3 : name.equals("frame-striped") ? 5 : 4;
    }

    private static Unsafe unsafe() {
        try {
            Field f = Unsafe.class.getDeclaredField("theUnsafe");
            f.setAccessible(true);
            return (Unsafe) f.get(null);
        } catch (Exception e) {
            return null;
        }
    }

    public static void object(int site) {
        bump(site, 16);
    }

    public static void array(int length, int site) {
        bump(site, 16 + 4L * length);
    }

    private static void bump(int site, long bytes) {
        Unsafe u = U;
        if (u == null) {
            return; // during this class's own initialisation
        }
        int s = site & (SITES - 1);
        switch (mode) {
            case 4:
                break;
            case 0:
                COUNTS[2 * s]++;
                COUNTS[2 * s + 1] += bytes;
                break;
            case 1:
                u.getAndAddLong(COUNTS, BASE + 16L * s, 1);
                u.getAndAddLong(COUNTS, BASE + 16L * s + 8, bytes);
                break;
            default:
                int stripe = (int) Thread.currentThread().getId() & (STRIPES - 1);
                long at = BASE + 8L * (2L * (s * (long) STRIPES + stripe));
                u.getAndAddLong(COUNTS, at, 1);
                u.getAndAddLong(COUNTS, at + 8, bytes);
        }
    }

    public static void enter(int site) {
        int slot = (int) Thread.currentThread().getId() & (CONTEXT.length - 1);
        CONTEXT[slot] = 3 * CONTEXT[slot] + site;
    }

    public static void leave(int site) {
        int slot = (int) Thread.currentThread().getId() & (CONTEXT.length - 1);
        CONTEXT[slot] = (CONTEXT[slot] - site) * INVERSE_OF_3;
    }

    private static final int KEYS = 1 << 22;
    private static final long[] KEY = new long[KEYS];
    private static final long[] KEYED = new long[2 * KEYS];

    public static void objectIn(int site, long context) {
        bumpIn(site, context, 16);
    }

    public static void arrayIn(int length, int site, long context) {
        bumpIn(site, context, 16 + 4L * length);
    }

    private static void bumpIn(int site, long context, long bytes) {
        Unsafe u = U;
        if (u == null) {
            return;
        }
        if (mode == 5) {
            bump(site, bytes); // frame-striped: contexts kept, counts by site alone
            return;
        }
        long key = (context * 0x9E3779B97F4A7C15L) ^ site ^ Long.MIN_VALUE;
        int slot = (int) (key ^ (key >>> 29)) & (KEYS - 1);
        for (int probe = 0; probe < 64; probe++) {
            long at = KEY[slot];
            if (at == key || (at == 0 && u.compareAndSwapLong(KEY, BASE + 8L * slot, 0, key))
                    || KEY[slot] == key) {
                u.getAndAddLong(KEYED, BASE + 16L * slot, 1);
                u.getAndAddLong(KEYED, BASE + 16L * slot + 8, bytes);
                return;
            }
            slot = (slot + 1) & (KEYS - 1);
        }
    }

    /** Keys of mode "frame" in use: the real stack walks the design would take. */
    public static long keys() {
        long n = 0;
        for (long k : KEY) {
            n += k == 0 ? 0 : 1;
        }
        return n;
    }

    public static long total() {
        for (int i = 0; i < KEYED.length; i += 2) {
            COUNTS[0] += KEYED[i];
        }
        long n = 0;
        for (int i = 0; i < COUNTS.length; i += 2) {
            n += COUNTS[i];
        }
        return n;
    }
}
