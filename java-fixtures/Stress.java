import java.io.InputStream;
import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.List;

/**
 * Workloads that once hurt the agent, one per first argument; each prints a
 * result that does not depend on timing, so a run under the agent must print
 * exactly what a run without it prints.
 *
 *   churn [n]     n threads (default 2000), 8 at a time, each allocating and
 *                 summing a little; prints the total
 *   deep [n]      recursion n frames deep (default 10000), then recursion
 *                 until a StackOverflowError, caught; prints the deep sum
 *   unload [n]    defines StressPlugin in n fresh class loaders (default 500),
 *                 calls it, drops them and collects: prints the sum and
 *                 whether most were unloaded
 *   exit8         8 threads call System.exit(7) at once
 *   deopt [n]     a deoptimization storm: StressDeoptPlugin in n fresh class
 *                 loaders (default 100), each copy's loop compiled while it
 *                 sees only Integer, then fed Long, then a mix (its compiled
 *                 code that inlined Integer.longValue is thrown away); prints
 *                 the sum
 *   gc [n]        n MB (default 4000) of short-lived arrays and lists, a
 *                 rolling window of them kept, System.gc() every 1000 MB;
 *                 prints the checksum
 *   ready [s]     prints READY, then keeps allocating and summing for s
 *                 seconds (default 30), prints DONE
 */
public class Stress {
    static volatile Object sink;

    public static void main(String[] args) throws Exception {
        String what = args.length > 0 ? args[0] : "churn";
        int n = args.length > 1 ? Integer.parseInt(args[1]) : -1;
        switch (what) {
            case "churn":
                System.out.println("churn total=" + churn(n < 0 ? 2000 : n));
                break;
            case "deep":
                System.out.println("deep sum=" + deep(n < 0 ? 10000 : n));
                System.out.println("overflow caught=" + overflow());
                break;
            case "unload":
                unload(n < 0 ? 500 : n);
                break;
            case "exit8":
                exit8();
                break;
            case "deopt":
                System.out.println("deopt sum=" + deopt(n < 0 ? 100 : n));
                break;
            case "gc":
                System.out.println("gc checksum=" + gc(n < 0 ? 4000 : n));
                break;
            case "ready":
                ready(n < 0 ? 30 : n);
                break;
            default:
                throw new IllegalArgumentException(what);
        }
    }

    static long work(int seed) {
        long sum = 0;
        for (int i = 0; i < 200; i++) {
            int[] a = new int[16];
            a[i % 16] = seed + i;
            sink = a;
            sum += a[i % 16];
        }
        return sum;
    }

    static long churn(int threads) throws InterruptedException {
        long[] results = new long[threads];
        for (int i = 0; i < threads; i += 8) {
            List<Thread> batch = new ArrayList<>();
            for (int j = i; j < Math.min(threads, i + 8); j++) {
                int index = j;
                Thread t = new Thread(() -> results[index] = work(index), "churn-" + j);
                batch.add(t);
                t.start();
            }
            for (Thread t : batch) {
                t.join();
            }
        }
        long total = 0;
        for (long r : results) {
            total += r;
        }
        return total;
    }

    static long deep(int n) {
        return n == 0 ? 0 : n + deep(n - 1);
    }

    static int depthReached;

    static void down(int n) {
        depthReached = n;
        down(n + 1);
    }

    static boolean overflow() {
        try {
            down(0);
            return false;
        } catch (StackOverflowError expected) {
            // After the error the thread must go on as before.
            return deep(100) == 5050;
        }
    }

    static void unload(int n) throws Exception {
        byte[] bytes;
        try (InputStream in = Stress.class.getResourceAsStream("StressPlugin.class")) {
            bytes = in.readAllBytes();
        }
        long sum = 0;
        List<WeakReference<Class<?>>> classes = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            ClassLoader loader = new ClassLoader(null) {
                @Override
                protected Class<?> findClass(String name) throws ClassNotFoundException {
                    if (!name.equals("StressPlugin")) {
                        throw new ClassNotFoundException(name);
                    }
                    return defineClass(name, bytes, 0, bytes.length);
                }
            };
            Class<?> plugin = loader.loadClass("StressPlugin");
            sum += (Integer) plugin.getMethod("value", int.class).invoke(null, i);
            classes.add(new WeakReference<>(plugin));
        }
        int unloaded = 0;
        for (int round = 0; round < 10 && unloaded < n * 9 / 10; round++) {
            System.gc();
            Thread.sleep(20);
            unloaded = 0;
            for (WeakReference<Class<?>> c : classes) {
                if (c.get() == null) {
                    unloaded++;
                }
            }
        }
        System.out.println("unload sum=" + sum + " mostly unloaded=" + (unloaded >= n * 9 / 10));
    }

    static void exit8() throws InterruptedException {
        Thread[] threads = new Thread[8];
        java.util.concurrent.CountDownLatch go = new java.util.concurrent.CountDownLatch(1);
        for (int i = 0; i < 8; i++) {
            threads[i] = new Thread(() -> {
                try {
                    go.await();
                } catch (InterruptedException e) {
                    return;
                }
                System.exit(7);
            });
            threads[i].start();
        }
        System.out.println("exiting with 7 from 8 threads");
        System.out.flush();
        go.countDown();
        for (Thread t : threads) {
            t.join();
        }
    }

    static void ready(int seconds) {
        System.out.println("READY");
        System.out.flush();
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        long sum = 0;
        while (System.nanoTime() < end) {
            sum += work((int) sum);
        }
        sink = sum;
        System.out.println("DONE");
    }

    /** A fresh class loader that defines the class `name` from `bytes`. */
    static ClassLoader loaderOf(String name, byte[] bytes) {
        return new ClassLoader(null) {
            @Override
            protected Class<?> findClass(String wanted) throws ClassNotFoundException {
                if (!wanted.equals(name)) {
                    throw new ClassNotFoundException(wanted);
                }
                return defineClass(wanted, bytes, 0, bytes.length);
            }
        };
    }

    static long deopt(int n) throws Exception {
        byte[] bytes;
        try (InputStream in = Stress.class.getResourceAsStream("StressDeoptPlugin.class")) {
            bytes = in.readAllBytes();
        }
        Number[] ints = new Number[1000];
        Number[] longs = new Number[1000];
        Number[] mixed = new Number[1000];
        for (int i = 0; i < 1000; i++) {
            ints[i] = i;
            longs[i] = (long) i;
            mixed[i] = (i % 3 == 0) ? (Number) (short) i : (i % 3 == 1) ? (Number) (double) i : (Number) i;
        }
        long sum = 0;
        for (int i = 0; i < n; i++) {
            Class<?> plugin = loaderOf("StressDeoptPlugin", bytes).loadClass("StressDeoptPlugin");
            java.lang.reflect.Method total = plugin.getMethod("total", Number[].class, int.class);
            sum += (Long) total.invoke(null, ints, 3000);
            sum += (Long) total.invoke(null, longs, 10);
            sum += (Long) total.invoke(null, mixed, 10);
        }
        return sum;
    }

    static long gc(int megabytes) {
        Object[] window = new Object[4096];
        long checksum = 0;
        long allocated = 0;
        int next = 0;
        while (allocated < megabytes * 1_000_000L) {
            int[] a = new int[256];
            a[next % 256] = next;
            List<Integer> list = new ArrayList<>();
            for (int i = 0; i < 16; i++) {
                list.add(i + next);
            }
            window[next % window.length] = (next % 3 == 0) ? a : list;
            checksum += a[next % 256] + list.get(next % 16);
            allocated += 1024 + 16 * 16 + 64;
            next++;
            if (allocated / 1_000_000_000L != (allocated - 1344) / 1_000_000_000L) {
                System.gc();
            }
        }
        return checksum;
    }
}
