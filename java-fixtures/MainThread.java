/**
 * What main() can see of its thread, printed: name, group, daemon, priority,
 * context class loader, the frames below main, and whether it is the thread
 * that ran this class's static initializer. Argument: "throw" (main throws),
 * "handler" (main gives its thread an uncaught-exception handler, then
 * throws), "exit" (System.exit(7)); none: main returns.
 */
public class MainThread {
    static final Thread INITIALIZER = Thread.currentThread();

    public static void main(String[] args) {
        Thread thread = Thread.currentThread();
        System.out.println("name=" + thread.getName());
        System.out.println("group=" + thread.getThreadGroup().getName());
        System.out.println("daemon=" + thread.isDaemon());
        System.out.println("priority=" + thread.getPriority());
        System.out.println("loader=" + (thread.getContextClassLoader() == ClassLoader.getSystemClassLoader()));
        StackTraceElement[] frames = new Throwable().getStackTrace();
        System.out.println("frames=" + frames.length + " " + frames[frames.length - 1].getMethodName());
        System.out.println("initializer=" + (thread == INITIALIZER));
        String what = args.length > 0 ? args[0] : "";
        if (what.equals("handler")) {
            thread.setUncaughtExceptionHandler(
                    (t, e) -> System.out.println("handled on " + t.getName() + ": " + e.getMessage()));
        }
        if (what.equals("exit")) {
            System.exit(7);
        }
        if (what.equals("throw") || what.equals("handler")) {
            throw new IllegalStateException("boom");
        }
    }
}
