/*
 * The class the byte code injected by hprof-rs (src/bci, cpu=times and
 * cpu=old) calls: HPROF's com.sun.demo.jvmti.hprof.Tracker, reduced to the
 * two calls we inject.
 *
 * Every instrumented method starts with
 *     ldc <class number>; <push method number>; invokestatic hprof_rs/Tracker.CallSite(II)V
 * and runs
 *     ldc <class number>; <push method number>; invokestatic hprof_rs/Tracker.ReturnSite(II)V
 * before each return instruction. Both do nothing until the agent engages
 * the tracker, so they stay two field reads the JIT inlines.
 *
 * What the agent must do:
 *  1. In Agent_OnLoad, put this class on the boot class path:
 *     AddToBootstrapClassLoaderSearch with a directory (allowed in the
 *     OnLoad phase) or a jar holding hprof_rs/Tracker.class (the bytes are
 *     hprof_rs::bci::TRACKER_CLASS_FILE). It lands in the boot loader's
 *     unnamed module, and HotSpot makes each named module whose class a
 *     ClassFileLoadHook changed read that module
 *     (JvmtiExport::add_default_read_edges).
 *  2. Instrument nothing before VMInit. The boot class path append is not
 *     searched until the module system is initialised, so an instrumented
 *     method running earlier fails with NoClassDefFoundError:
 *     hprof_rs/Tracker, whatever `engaged` holds, and the VM dies (seen on
 *     JDK 25 with every class instrumented, and with only the classes loaded
 *     after the primordial phase). From VMInit on, instrument in
 *     ClassFileLoadHook, and RetransformClasses the classes loaded before
 *     (can_retransform_classes) if they are to be timed: retransforming all
 *     ~800 JDK classes loaded by then, java.lang.Object included, runs
 *     fine (checked with a java.lang.instrument agent serving this
 *     rewriter's output). HPROF could instrument from the first class only
 *     because its Tracker was in rt.jar.
 *  3. Never instrument this class (bci::rewrite_class leaves it alone).
 *  4. At VMInit, RegisterNatives on hprof_rs/Tracker:
 *        nativeCallSite   (Ljava/lang/Thread;II)V
 *        nativeReturnSite (Ljava/lang/Thread;II)V
 *     and only then set `engaged` to a non-zero value (SetStaticIntField;
 *     the field is private, JNI ignores that): engaged without natives,
 *     every instrumented call throws UnsatisfiedLinkError, whose
 *     construction runs instrumented code, until the stack overflows. Set
 *     it back to 0 at the start of VMDeath and whenever timing stops
 *     (socket command), before unregistering anything.
 *  5. In the natives, guard against re-entry with a per-thread flag: the
 *     agent's own JNI calls may run instrumented Java code, which calls back
 *     here. Map (class number, method number) to a method with the
 *     MethodInfo list bci::rewrite_class returned for that class number.
 *  6. Exceptions that leave a method skip its ReturnSite: pop the shadow
 *     stack on ExceptionCatch (and rebuild it from GetStackTrace when a
 *     ReturnSite does not match), as HPROF did.
 */
package hprof_rs;

/** Entry and exit hooks of instrumented methods; inert until engaged. */
public final class Tracker {
    /** Non-zero while the agent collects; set by the agent through JNI. */
    private static volatile int engaged;

    private Tracker() {}

    /** Called on entry to method number {@code mnum} of class number {@code cnum}. */
    public static void CallSite(int cnum, int mnum) {
        if (engaged != 0) {
            nativeCallSite(Thread.currentThread(), cnum, mnum);
        }
    }

    /** Called before each return of method number {@code mnum} of class number {@code cnum}. */
    public static void ReturnSite(int cnum, int mnum) {
        if (engaged != 0) {
            nativeReturnSite(Thread.currentThread(), cnum, mnum);
        }
    }

    private static native void nativeCallSite(Thread thread, int cnum, int mnum);

    private static native void nativeReturnSite(Thread thread, int cnum, int mnum);
}
