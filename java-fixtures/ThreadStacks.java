import java.lang.reflect.Field;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * What the agent's larger stacks for new threads must never change.
 *
 * <p>{@code crowd <n>}: starts {@code n} threads that all stay alive until the last has started
 * (or one failed to start), then lets them end; prints {@code started=<k>} (k = n unless the
 * process ran out of room for thread stacks, as under {@code ulimit -v}) and {@code failed=<0|1>}.
 *
 * <p>{@code sizes <n>}: starts {@code n} threads, two at a time, each made with a stack size of
 * 200,000 bytes, and each reads the stack size field of its own Thread (by reflection: {@code
 * Thread.stackSize} up to JDK 18, {@code Thread.holder.stackSize} from 19; run with {@code
 * --add-opens java.base/java.lang=ALL-UNNAMED} on 17 and later) first thing in {@code run()};
 * prints {@code other=<k>}, the number of threads that read anything but 200000, and {@code
 * read=<n>}.
 */
public class ThreadStacks {
    public static void main(String[] args) throws Exception {
        int n = Integer.parseInt(args[1]);
        switch (args[0]) {
            case "crowd":
                crowd(n);
                break;
            case "sizes":
                sizes(n);
                break;
            default:
                throw new IllegalArgumentException(args[0]);
        }
    }

    static void crowd(int n) throws InterruptedException {
        CountDownLatch release = new CountDownLatch(1);
        Thread[] threads = new Thread[n];
        int started = 0;
        boolean failed = false;
        for (int i = 0; i < n; i++) {
            threads[i] = new Thread(() -> {
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            try {
                threads[i].start();
                started++;
            } catch (OutOfMemoryError e) {
                failed = true;
                break;
            }
        }
        release.countDown();
        for (int i = 0; i < started; i++) {
            threads[i].join();
        }
        System.out.println("started=" + started);
        System.out.println("failed=" + (failed ? 1 : 0));
    }

    static void sizes(int n) throws Exception {
        Field holder = null;
        Field size;
        try {
            size = Thread.class.getDeclaredField("stackSize");
        } catch (NoSuchFieldException e) {
            holder = Thread.class.getDeclaredField("holder");
            holder.setAccessible(true);
            size = holder.getType().getDeclaredField("stackSize");
        }
        size.setAccessible(true);
        Field holderField = holder;
        Field sizeField = size;
        AtomicInteger other = new AtomicInteger();
        AtomicInteger read = new AtomicInteger();
        Runnable check = () -> {
            try {
                Object owner = Thread.currentThread();
                if (holderField != null) {
                    owner = holderField.get(owner);
                }
                if (sizeField.getLong(owner) != 200_000L) {
                    other.incrementAndGet();
                }
                read.incrementAndGet();
            } catch (IllegalAccessException e) {
                throw new IllegalStateException(e);
            }
        };
        for (int i = 0; i < n; i += 2) {
            Thread a = new Thread(null, check, "sized-a", 200_000L);
            Thread b = new Thread(null, check, "sized-b", 200_000L);
            a.start();
            b.start();
            a.join();
            b.join();
        }
        System.out.println("other=" + other.get());
        System.out.println("read=" + read.get());
    }
}
