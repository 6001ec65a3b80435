package hprof_rs;

/**
 * The agent's garbage collection in the JVM's last system shutdown hook
 * (src/agent/jvm/exit_collection.rs).
 *
 * <p>Under ZGC and Shenandoah a collection forced at the exit dump would wait forever: HotSpot
 * stops those collectors' threads before it tells agents the JVM is dying. The shutdown hooks
 * run before that, so the agent registers one of these in the last of java.lang.Shutdown's
 * system slots, after the program's own hooks: what the exit dump then walks is the heap as the
 * program left it, collected. Nothing the program can reach refers to it.
 */
final class ExitCollection implements Runnable {
    private ExitCollection() {}

    /** The agent's native: forces a collection. */
    private static native void collect();

    @Override
    public void run() {
        collect();
    }
}
