import java.io.BufferedReader;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.log4j.FileAppender;
import org.apache.log4j.Level;
import org.apache.log4j.Logger;
import org.apache.log4j.PatternLayout;

/**
 * Workload "log4j": Log4j 1.2 (Debian package liblog4j1.2-java) logging from several threads
 * into one file. Log4j 1.2 delivers every event inside `synchronized (logger)` in
 * Category.callAppenders and again inside the synchronized AppenderSkeleton.doAppend, so the
 * threads contend on one monitor for every line: with 4 threads on 2 cores that is many
 * thousands of contended entries per second, the lock-heavy pattern monitor=y exists to show.
 *
 * The layout has no timestamp, so each line depends only on its thread and index; the
 * checksum (line count and an order-independent sum of line hashes, read back from the file)
 * is the same for any interleaving.
 *
 * Usage: Log4jLoad [THREADS [LINES_PER_THREAD]]
 */
public final class Log4jLoad {
    public static void main(String[] args) throws Exception {
        int threads = args.length > 0 ? Integer.parseInt(args[0]) : 4;
        int lines = args.length > 1 ? Integer.parseInt(args[1]) : 600_000;

        File log = File.createTempFile("log4j-load", ".log");
        try {
            FileAppender appender = new FileAppender(
                    new PatternLayout("%t %-5p %c - %m%n"), log.getPath(), false);
            Logger logger = Logger.getLogger("bench.orders");
            logger.setAdditivity(false);
            logger.setLevel(Level.INFO);
            logger.addAppender(appender);

            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread[] workers = new Thread[threads];
            long start = System.nanoTime();
            for (int t = 0; t < threads; t++) {
                final int worker = t;
                workers[t] = new Thread(() -> {
                    try {
                        logLines(logger, worker, lines);
                    } catch (Throwable e) {
                        failure.compareAndSet(null, e);
                    }
                }, "log4j-worker-" + t);
                workers[t].start();
            }
            for (Thread w : workers) {
                w.join();
            }
            long elapsedMs = (System.nanoTime() - start) / 1_000_000;
            if (failure.get() != null) {
                throw new RuntimeException("worker failed", failure.get());
            }
            appender.close();

            long count = 0;
            long hashSum = 0;
            try (BufferedReader in = Files.newBufferedReader(log.toPath(), StandardCharsets.UTF_8)) {
                for (String line = in.readLine(); line != null; line = in.readLine()) {
                    count++;
                    hashSum += line.hashCode();
                }
            }
            if (count != (long) threads * lines) {
                throw new IllegalStateException("expected " + threads * lines + " lines, read " + count);
            }
            System.out.println("lines=" + count);
            System.out.println("elapsed_ms=" + elapsedMs);
            System.out.println("checksum=" + Long.toHexString(count * 1_000_003L + hashSum));
        } finally {
            log.delete();
        }
    }

    /** What a service logs as it works: mostly INFO, some WARN, a DEBUG that the level drops. */
    static void logLines(Logger logger, int worker, int lines) {
        long account = 1_000L * worker;
        for (int i = 0; i < lines; i++) {
            account = (account * 6364136223846793005L + 1442695040888963407L) & 0xffffffffffffL;
            int amount = (int) (account % 100_000);
            if (i % 97 == 0) {
                logger.warn("order " + i + " of account " + (account % 10_000) + " held: amount "
                        + amount + " over limit");
            } else {
                logger.info("order " + i + " of account " + (account % 10_000) + " amount "
                        + amount + " accepted");
            }
            if (logger.isDebugEnabled()) {
                logger.debug("order " + i + " detail");
            }
        }
    }
}
