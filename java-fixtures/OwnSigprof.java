import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.lang.reflect.Proxy;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A program with its own SIGPROF handler: installs one through
 * sun.misc.Signal (reached by reflection: jdk.unsupported), then spins in
 * ShortThreads.burn() until its own CPU clock has advanced args[0] ms
 * (default 1000). Prints "handler_calls=<n>" (how many times its handler
 * ran) and "cpu_ms=<n>" (the CPU burn() used). Nothing in it raises SIGPROF, so
 * the right count is 0.
 */
public class OwnSigprof {
    static final AtomicLong CALLS = new AtomicLong();

    public static void main(String[] args) throws Exception {
        long millis = args.length > 0 ? Long.parseLong(args[0]) : 1000;
        Class<?> signal = Class.forName("sun.misc.Signal");
        Class<?> handler = Class.forName("sun.misc.SignalHandler");
        Object prof = signal.getConstructor(String.class).newInstance("PROF");
        Object counting =
                Proxy.newProxyInstance(
                        OwnSigprof.class.getClassLoader(),
                        new Class<?>[] {handler},
                        (proxy, method, margs) -> {
                            if (method.getName().equals("handle")) {
                                CALLS.incrementAndGet();
                            }
                            return null;
                        });
        signal.getMethod("handle", signal, handler).invoke(null, prof, counting);
        long spent = ShortThreads.burn(ManagementFactory.getThreadMXBean(), millis * 1_000_000L);
        // Calls still being dispatched by the JVM's signal thread land first.
        Thread.sleep(100);
        System.out.println("handler_calls=" + CALLS.get());
        System.out.println("cpu_ms=" + spent / 1_000_000L);
    }
}
