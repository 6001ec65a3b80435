package hprof_rs;

/**
 * Binds java.lang.Thread's native start0() to the agent's function, or back to the JVM's
 * (src/agent/jvm/thread_stacks.rs: threads started while rewritten code runs get more stack).
 *
 * <p>HotSpot prints a warning on the program's standard output when a native method of a JDK
 * class is bound again from code of another class loader, or from no Java code at all, as in an
 * agent's callback. The agent defines this class in the boot loader, JDK classes' own, and binds
 * through {@link #rebind}: the JNI call then comes from here, and nothing is printed.
 */
final class StartBinder {
    private StartBinder() {}

    /** The agent's native: binds start0 to the enlarging function, or back to the JVM's. */
    private static native void bind(boolean enlarging);

    /** Called by the agent (JNI), so that bind's caller is a boot-loader class. */
    static void rebind(boolean enlarging) {
        bind(enlarging);
    }
}
