import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * A small service to attach to: a fixed pool of two threads
 * (`pool-worker-1`, `pool-worker-2`), both started before anything else
 * happens, and a requester (the main thread) that for `seconds` (default
 * 10) submits two requests of `fib(n)` (default 20) at a time and waits for
 * both answers, so the pool threads alternate between computing and
 * parking in the pool's queue. Prints `READY` (flushed) once the pool's
 * threads have served a first request, then at the end `fib=<fib(n)>` and
 * `requests=<pairs served>`; exits with code 0.
 */
public class PoolService {
    static int fib(int n) {
        return n < 2 ? n : fib(n - 1) + fib(n - 2);
    }

    static int serve(ThreadPoolExecutor pool, int n) throws Exception {
        Future<Integer> a = pool.submit(() -> fib(n));
        Future<Integer> b = pool.submit(() -> fib(n));
        int first = a.get();
        int second = b.get();
        if (first != second) {
            throw new IllegalStateException(first + " != " + second);
        }
        return first;
    }

    public static void main(String[] args) throws Exception {
        long seconds = args.length > 0 ? Long.parseLong(args[0]) : 10;
        int n = args.length > 1 ? Integer.parseInt(args[1]) : 20;
        ThreadFactory named = new ThreadFactory() {
            private int made;

            @Override
            public synchronized Thread newThread(Runnable task) {
                made++;
                return new Thread(task, "pool-worker-" + made);
            }
        };
        ThreadPoolExecutor pool = new ThreadPoolExecutor(
                2, 2, 0, TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(), named);
        pool.prestartAllCoreThreads();
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        int result = serve(pool, n);
        long requests = 1;
        System.out.println("READY");
        System.out.flush();
        while (System.nanoTime() < end) {
            result = serve(pool, n);
            requests++;
        }
        pool.shutdown();
        pool.awaitTermination(60, TimeUnit.SECONDS);
        System.out.println("fib=" + result);
        System.out.println("requests=" + requests);
    }
}
