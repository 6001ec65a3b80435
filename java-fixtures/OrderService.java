import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * A service to attach to: a pool of two threads, made before anything can
 * attach, takes orders for `seconds` (default 10). Each task makes ORDERS
 * `OrderService$Order` objects in `take()` and keeps the last batch; a
 * requester thread submits a task whenever the last one is done, so the
 * pool threads take turns working and parking. Prints `READY` (flushed)
 * once the pool ran its first task, then `orders=<the last batch's sum>`,
 * the same whatever the number of tasks, and exits 0.
 */
public class OrderService {
    static final int ORDERS = 10_000;
    static volatile Order[] kept = new Order[0];

    static final class Order {
        final long id;
        final long amount;

        Order(long id, long amount) {
            this.id = id;
            this.amount = amount;
        }
    }

    static long take() {
        Order[] batch = new Order[ORDERS];
        long sum = 0;
        for (int i = 0; i < ORDERS; i++) {
            batch[i] = new Order(i, i % 97);
            sum += batch[i].amount;
        }
        kept = batch;
        return sum;
    }

    public static void main(String[] args) throws Exception {
        long seconds = args.length > 0 ? Long.parseLong(args[0]) : 10;
        ExecutorService pool = Executors.newFixedThreadPool(2);
        long last = pool.submit(OrderService::take).get();
        System.out.println("READY");
        System.out.flush();
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        while (System.nanoTime() < end) {
            last = pool.submit(OrderService::take).get();
            Thread.sleep(0, 100_000);
        }
        pool.shutdown();
        pool.awaitTermination(10, TimeUnit.SECONDS);
        System.out.println("orders=" + last);
    }
}
