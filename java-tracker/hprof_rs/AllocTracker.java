/*
 * The class the allocation counts injected by hprof-rs (crates/hprof-bytecode/src/count.rs,
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
 * It uses the JDK's internal jdk.internal.misc.Unsafe (the agent exports
 * that package to this class's module before the class links; compile
 * with --add-exports java.base/jdk.internal.misc=ALL-UNNAMED): its
 * atomic add costs what a plain one does in compiled code, and unlike
 * sun.misc.Unsafe it prints no deprecation warning on JDK 24 and later.
 *
 * Bounds: sites numbered past MAX_PAGES * SITES_PER_PAGE (16,777,216) are
 * not counted; a page is 32 KiB of heap (512 sites x 4 stripes x 2 longs).
 *
 * With calling contexts (heap=sites with depth above 1, crates/hprof-bytecode/src/
 * call_context.rs) the injected calls pass the caller's context too, and
 * the counts are keyed by (site, context) in an open-addressing table of
 * KEY_SLOTS keys, told by the agent (keySlots): a key is claimed with one
 * compare-and-set, its counters bumped atomically. A key that finds no free
 * slot within PROBES steps is counted by its site alone (its trace then
 * stops at the site). Two threads claiming the same key at once may make
 * two entries of it, which the agent adds up. A new key is shown to the
 * agent (trusted): a context whose call chain does not name the methods
 * below it (the VM entered a method with no call of ours before it: a
 * class loader run while a first call was being linked, say) is marked,
 * and each allocation under it is counted by the agent with a walk of this
 * thread's stack (walked).
 *
 * The tracker never throws into the program: a failure (a page that
 * cannot be allocated) leaves the allocation uncounted and is remembered
 * in `failure` for the agent to report.
 *
 * What the agent must do: define this class in the boot loader (its nested
 * MadeAt first), export
 * jdk.internal.misc to its module (in the JVM's table: Module.addExports0), register its
 * native methods, and initialise it (a static field lookup does) before any class calling it
 * is loaded; it is never rewritten itself.
 */
package hprof_rs;

import jdk.internal.misc.Unsafe;

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

    private static final Unsafe U = Unsafe.getUnsafe();
    private static final long LONG_BASE = layout("arrayBaseOffset", long[].class);

    /**
     * How many of each site's first allocations (per stripe) the agent
     * walks for their trace, told by the agent (firstWalks): 0 unless a
     * site's rows come from the live sample (alloc_count=sites), where
     * these walks give a site the sample misses its real callers. After
     * them, one allocation in THINNING is walked too, chosen by a hash of
     * the site and its count (thinned): the same counts in every run.
     */
    private static final int FIRST_WALKS = firstWalks();
    /** log2 of THINNING, the agent's `THINNING_SHIFT`. */
    private static final int THINNING_SHIFT = 12;

    /** Keyed counters (0 slots: no contexts); the agent reads all three. */
    private static final int KEY_SLOTS = keySlots();
    private static final int PROBES = 32;
    /**
     * KEY_WORDS longs per slot, side by side: its owner (site + 1; 0 while
     * free, -1 while being claimed, -(site + 2) for a walked context), its
     * context, objects, bytes. One slot is one place in memory: kept in three
     * arrays, each allocation under a context touched three cache lines of
     * a table of megabytes.
     */
    private static final int KEY_WORDS = 4;
    private static final long[] KEYED = new long[KEY_WORDS * KEY_SLOTS];
    /** Array base offset by element code (log2 of the primitive size, 4: reference). */
    private static final long[] BASE = {
        layout("arrayBaseOffset", byte[].class),
        layout("arrayBaseOffset", char[].class),
        layout("arrayBaseOffset", int[].class),
        layout("arrayBaseOffset", long[].class),
        layout("arrayBaseOffset", Object[].class),
    };
    /** log2 of the element size by element code. */
    private static final int[] SHIFT = {
        0, 1, 2, 3, layout("arrayIndexScale", Object[].class) == 8 ? 3 : 2
    };

    private AllocTracker() {}

    /**
     * Unsafe's arrayBaseOffset or arrayIndexScale of `arrayClass`, asked of
     * the agent: they return an int up to JDK 24 and a long from JDK 25 on,
     * and the agent calls them through JNI. (Not by reflection here, which
     * would check the export in java.base's Java-side record; the agent
     * exports the package in the JVM's own table only.)
     */
    private static long layout(String method, Class<?> arrayClass) {
        long value = unsafeLayout(method, arrayClass);
        if (value < 0) {
            throw new IllegalStateException(method + " of " + arrayClass.getName());
        }
        return value;
    }

    /** Unsafe's `method` (arrayBaseOffset or arrayIndexScale) of
     * `arrayClass`; -1 when it cannot be called. */
    private static native long unsafeLayout(String method, Class<?> arrayClass);

    /** Before `new`: one instance at `site`. */
    public static void object(int site) {
        bump(site, 0);
    }

    /** Before `new`: one instance at `site` called in `context`. */
    public static void object(int site, long context) {
        bumpIn(site, context, 0);
    }

    /** As array(int, int), called in `context`. */
    public static void array(int length, int siteAndElement, long context) {
        if (length < 0) {
            return;
        }
        int element = siteAndElement & 7;
        if (element > 4) {
            return;
        }
        bumpIn(siteAndElement >>> 3, context, size(element, length));
    }

    /** As arrays(Object, int), called in `context`. */
    public static void arrays(Object array, int site, long context) {
        try {
            countTree(array, site, context, true);
        } catch (Throwable t) {
            if (failure == null) {
                failure = t;
            }
        }
    }

    /** As made(Object, int), called in `context`. */
    public static void made(Object object, int site, long context) {
        int counted = countedSite(object, site);
        if (counted >= 0) {
            bumpIn(counted, context, arrayBytes(object));
        } else if (counted == UNCACHED) {
            madeSlow(object, site, context);
        }
    }

    /** As made(Object, int, long), the object counted by the agent itself. */
    private static native void madeSlow(Object object, int site, long context);

    /** The allocations walked first per site and stripe: 0 for none. */
    private static native int firstWalks();

    /** One of a site's first allocations (`before` counted at the site on
     * this stripe before it), or one chosen by `thinned`: the agent keeps
     * its trace. */
    private static native void walkForTrace(int site, long bytes, long before);

    /**
     * Whether the allocation numbered `before` on its stripe at `site` is
     * walked: about one in 2^THINNING_SHIFT, by the top bits of a
     * multiplicative hash. For one site the hashes of successive counts are
     * a Weyl sequence, spread evenly over every residue of the count, so
     * callers that take turns in any period are walked in their shares.
     */
    private static boolean thinned(int site, long before) {
        return ((before + ((long) site << 32)) * 0x9E3779B97F4A7C15L) >>> (64 - THINNING_SHIFT) == 0;
    }

    /** The size of the keyed table: 0 without calling contexts. */
    private static native int keySlots();

    /** Whether `context` names the real callers of `site`'s method. */
    private static native boolean trusted(int site, long context);

    /** One allocation at `site` under an untrusted context: the agent counts
     * it with this thread's stack. */
    private static native void walked(int site, long bytes);

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

    /**
     * After a call that returns an object the VM made without telling the
     * agent (Unsafe.allocateInstance before JDK 19, say): the agent counts
     * it at `site` under its class (the same call makes objects of many
     * classes: method-handle constructors, capturing lambdas). Each
     * (site, class) gets a site number of its own from the agent, once,
     * and is counted there like any `new` (an array with its bytes): no call
     * into the agent per object. After a `clone()` call too, where the agent
     * answers per (site, class) whether the call reached Object.clone, the
     * VM's copy (an override that calls super.clone() is counted there).
     */
    public static void made(Object object, int site) {
        int counted = countedSite(object, site);
        if (counted >= 0) {
            bump(counted, arrayBytes(object));
        } else if (counted == UNCACHED) {
            madeSlow(object, site);
        }
    }

    /** The bytes of `object` when it is an array (0 for an instance: the
     * agent sizes those by their class). */
    private static long arrayBytes(Object object) {
        Class<?> component = object.getClass().getComponentType();
        if (component == null) {
            return 0;
        }
        int element;
        if (!component.isPrimitive()) {
            element = 4;
        } else if (component == long.class || component == double.class) {
            element = 3;
        } else if (component == int.class || component == float.class) {
            element = 2;
        } else if (component == char.class || component == short.class) {
            element = 1;
        } else {
            element = 0;
        }
        return size(element, java.lang.reflect.Array.getLength(object));
    }

    /** As made(Object, int), the object counted by the agent itself. */
    private static native void madeSlow(Object object, int site);

    /** countedSite's answer when the agent gave no site number. */
    private static final int UNCACHED = -1;
    /** countedSite's answer when there is nothing to count (the agent's
     * too, for a `clone()` call that did not reach Object.clone). */
    private static final int NOTHING = -2;

    /**
     * The site number `site`'s objects of this object's class are counted
     * under, from a small table (the class held weakly: an entry must not
     * keep a class loader alive), asked of the agent on a miss.
     */
    private static int countedSite(Object object, int site) {
        if (object == null) {
            return NOTHING;
        }
        Class<?> made = object.getClass();
        MadeAt[] table = MADE_AT;
        int slot = (site * 0x9E3779B1 + made.hashCode()) & (table.length - 1);
        MadeAt at = table[slot];
        if (at != null && at.site == site && at.get() == made) {
            return at.counted;
        }
        try {
            int counted = madeSite(object, site);
            if (counted >= 0 || counted == NOTHING) {
                table[slot] = new MadeAt(made, site, counted);
            }
            return counted < 0 && counted != NOTHING ? UNCACHED : counted;
        } catch (Throwable t) {
            if (failure == null) {
                failure = t;
            }
            return NOTHING;
        }
    }

    /** The site number of objects of `object`'s class made at `site`; -1
     * when the agent keeps none (it counts each itself), -2 when there is
     * nothing to count. */
    private static native int madeSite(Object object, int site);

    /** One entry of MADE_AT: the objects of a class made at a site. */
    private static final class MadeAt extends java.lang.ref.WeakReference<Class<?>> {
        final int site;
        final int counted;

        MadeAt(Class<?> made, int site, int counted) {
            super(made);
            this.site = site;
            this.counted = counted;
        }
    }

    /** Entries by (site, class) hash, replaced on collision. */
    private static final MadeAt[] MADE_AT = new MadeAt[1 << 12];

    /**
     * After a call that returns a class file generated at run time (a
     * lambda's class, a method handle form), to be defined as a hidden
     * class: the same class with its allocations counted, by the agent.
     */
    public static native byte[] generated(byte[] classFile);

    /**
     * After `multianewarray`: `array` at `site` and every array it holds,
     * all new, each level down at the next site number.
     */
    public static void arrays(Object array, int site) {
        try {
            countTree(array, site, 0, false);
        } catch (Throwable t) {
            if (failure == null) {
                failure = t;
            }
        }
    }

    private static void countTree(Object array, int site, long context, boolean keyed) {
        if (array instanceof Object[]) {
            Object[] elements = (Object[]) array;
            count(site, context, keyed, size(4, elements.length));
            for (Object element : elements) {
                if (element != null) {
                    countTree(element, site + 1, context, keyed);
                }
            }
        } else if (array instanceof byte[]) {
            count(site, context, keyed, size(0, ((byte[]) array).length));
        } else if (array instanceof boolean[]) {
            count(site, context, keyed, size(0, ((boolean[]) array).length));
        } else if (array instanceof char[]) {
            count(site, context, keyed, size(1, ((char[]) array).length));
        } else if (array instanceof short[]) {
            count(site, context, keyed, size(1, ((short[]) array).length));
        } else if (array instanceof int[]) {
            count(site, context, keyed, size(2, ((int[]) array).length));
        } else if (array instanceof float[]) {
            count(site, context, keyed, size(2, ((float[]) array).length));
        } else if (array instanceof long[]) {
            count(site, context, keyed, size(3, ((long[]) array).length));
        } else if (array instanceof double[]) {
            count(site, context, keyed, size(3, ((double[]) array).length));
        }
    }

    private static void count(int site, long context, boolean keyed, long bytes) {
        if (keyed) {
            bumpIn(site, context, bytes);
        } else {
            bump(site, bytes);
        }
    }

    /**
     * One object at (`site`, `context`). The context's top bit is dropped:
     * it is what is left of a fourth call site, which no trace shows.
     * Never inlined (HotSpot honours the annotation in classes of the boot
     * loader): inlined into the program's methods, its probe loop's values
     * made each compiled frame of them larger, and a compiled recursion on
     * the main thread, whose stack no agent can enlarge, reached half its
     * depth; called, its frame exists once, at the top of the stack.
     */
    @jdk.internal.vm.annotation.DontInline
    private static void bumpIn(int site, long context, long bytes) {
        if (KEY_SLOTS == 0) {
            bump(site, bytes);
            return;
        }
        long key = context & Long.MAX_VALUE;
        int hash = slotHash(site, key);
        Unsafe u = U;
        long[] keyed = KEYED;
        for (int probe = 0; probe < PROBES; probe++) {
            int slot = (hash + probe) & (KEY_SLOTS - 1);
            long at = LONG_BASE + 8L * KEY_WORDS * slot;
            long owner = u.getLongAcquire(keyed, at);
            if (owner == 0 && u.compareAndSetLong(keyed, at, 0, -1)) {
                owner = claim(at, site, key);
            } else if ((owner != site + 1 && owner != -(site + 2L))
                    || u.getLong(keyed, at + 8) != key) {
                continue;
            }
            if (owner < 0) {
                walked(site, bytes);
                return;
            }
            u.getAndAddLong(keyed, at + 16, 1);
            if (bytes != 0) {
                u.getAndAddLong(keyed, at + 24, bytes);
            }
            return;
        }
        bump(site, bytes);
    }

    /**
     * Where the probes of (`site`, `key`) start. Every bit of both moves
     * every bit of the result (SplitMix64's finaliser): the sites of one
     * method are numbered in a row and share their caller's context, and a
     * hash that kept them in a row of slots (the site added after mixing
     * the context) made runs of hundreds of full slots, in which another
     * key landing ran out of probes.
     */
    private static int slotHash(int site, long key) {
        long z = key + (site + 1L) * 0x9E3779B97F4A7C15L;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return (int) (z ^ (z >>> 31));
    }

    /**
     * Fills a slot this thread claimed, then opens it to the others: owned
     * by site + 1, or by -(site + 2) when the agent did not trust the
     * context (its allocations are walked).
     */
    private static long claim(long at, int site, long key) {
        U.putLong(KEYED, at + 8, key);
        long owner = trusted(site, key) ? site + 1L : -(site + 2L);
        U.putLongRelease(KEYED, at, owner);
        return owner;
    }

    private static long size(int element, int length) {
        return (BASE[element] + ((long) length << SHIFT[element]) + 7) & ~7L;
    }

    private static void bump(int site, long bytes) {
        int page = site >>> PAGE_SHIFT;
        if (page >= MAX_PAGES) {
            return;
        }
        long[] counters = PAGES[page];
        if (counters == null && (counters = newPage(page)) == null) {
            return;
        }
        Unsafe u = U;
        int stripe = (int) Thread.currentThread().getId() & (STRIPES - 1);
        long at = LONG_BASE + 16L * ((stripe << PAGE_SHIFT) + (site & (SITES_PER_PAGE - 1)));
        long before = u.getAndAddLong(counters, at, 1);
        if (bytes != 0) {
            u.getAndAddLong(counters, at + 8, bytes);
        }
        if (FIRST_WALKS != 0 && (before < FIRST_WALKS || thinned(site, before))) {
            walkForTrace(site, bytes, before);
        }
    }

    /**
     * Page `page`, made now unless another thread made it first. (A thread
     * that reads PAGES without the lock and sees the new page sees it
     * zeroed: the default values of a new array are visible to all.)
     */
    private static synchronized long[] newPage(int page) {
        try {
            if (PAGES[page] == null) {
                PAGES[page] = new long[2 * STRIPES * SITES_PER_PAGE];
            }
            return PAGES[page];
        } catch (Throwable t) {
            if (failure == null) {
                failure = t;
            }
            return null;
        }
    }
}
