import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Random;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Workload "h2": the H2 database engine (Debian package libh2-java) serves a multi-threaded
 * OLTP-style load through JDBC on an in-memory database. Each worker owns a range of accounts
 * and draws its operations from its own fixed seed; all workers also add to a few shared
 * counter rows, so they wait on each other's row locks and the engine's monitors. Every query
 * result a worker sees depends only on its own rows, and the shared counters only receive
 * additions, so the printed checksum is the same for any interleaving of the threads.
 *
 * Usage: H2Load [THREADS [TRANSACTIONS_PER_THREAD]]
 */
public final class H2Load {
    static final int ACCOUNTS_PER_THREAD = 2_000;
    static final int COUNTERS = 4;
    static final String URL = "jdbc:h2:mem:bench;DB_CLOSE_DELAY=-1;LOCK_TIMEOUT=60000";

    public static void main(String[] args) throws Exception {
        int threads = args.length > 0 ? Integer.parseInt(args[0]) : 4;
        int transactions = args.length > 1 ? Integer.parseInt(args[1]) : 16_000;

        try (Connection c = DriverManager.getConnection(URL, "sa", "");
                Statement s = c.createStatement()) {
            s.execute("CREATE TABLE account(id INT PRIMARY KEY, owner VARCHAR(40) NOT NULL,"
                    + " balance BIGINT NOT NULL)");
            s.execute("CREATE TABLE orders(id BIGINT PRIMARY KEY, account_id INT NOT NULL,"
                    + " amount INT NOT NULL, note VARCHAR(80), created BIGINT NOT NULL)");
            s.execute("CREATE INDEX orders_account ON orders(account_id)");
            s.execute("CREATE TABLE counter(k INT PRIMARY KEY, v BIGINT NOT NULL)");
            c.setAutoCommit(false);
            try (PreparedStatement ins = c.prepareStatement("INSERT INTO account VALUES (?, ?, ?)")) {
                Random r = new Random(7);
                for (int id = 0; id < threads * ACCOUNTS_PER_THREAD; id++) {
                    ins.setInt(1, id);
                    ins.setString(2, "owner-" + Long.toString(r.nextLong() & 0xffffffffL, 36));
                    ins.setLong(3, 1_000 + r.nextInt(100_000));
                    ins.addBatch();
                }
                ins.executeBatch();
            }
            for (int k = 0; k < COUNTERS; k++) {
                s.execute("INSERT INTO counter VALUES (" + k + ", 0)");
            }
            c.commit();
        }

        long[] sums = new long[threads];
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread[] workers = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            final int worker = t;
            workers[t] = new Thread(() -> {
                try {
                    sums[worker] = work(worker, transactions);
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }, "h2-worker-" + t);
            workers[t].start();
        }
        for (Thread w : workers) {
            w.join();
        }
        if (failure.get() != null) {
            throw new RuntimeException("worker failed", failure.get());
        }

        long checksum = 17;
        for (long sum : sums) {
            checksum = checksum * 31 + sum;
        }
        try (Connection c = DriverManager.getConnection(URL, "sa", "");
                Statement s = c.createStatement()) {
            checksum = checksum * 31 + fold(s.executeQuery(
                    "SELECT COUNT(*), SUM(amount), SUM(LENGTH(note)), MAX(created) FROM orders"));
            checksum = checksum * 31 + fold(s.executeQuery(
                    "SELECT a.id / 100, COUNT(o.id), SUM(o.amount), SUM(a.balance) FROM account a"
                            + " LEFT JOIN orders o ON o.account_id = a.id GROUP BY a.id / 100"
                            + " ORDER BY 1"));
            checksum = checksum * 31 + fold(s.executeQuery("SELECT k, v FROM counter ORDER BY k"));
            checksum = checksum * 31 + fold(s.executeQuery(
                    "SELECT owner, balance FROM account ORDER BY balance DESC, id LIMIT 50"));
            s.execute("SHUTDOWN");
        }
        System.out.println("h2: " + threads + " workers x " + transactions + " transactions");
        System.out.println("checksum=" + Long.toHexString(checksum));
    }

    /** One worker: transactions over its own accounts, each ending with one shared counter. */
    static long work(int worker, int transactions) throws SQLException {
        Random r = new Random(1_000 + worker);
        int first = worker * ACCOUNTS_PER_THREAD;
        long orderId = (long) worker << 40;
        long sum = 0;
        try (Connection c = DriverManager.getConnection(URL, "sa", "");
                PreparedStatement insert = c.prepareStatement(
                        "INSERT INTO orders VALUES (?, ?, ?, ?, ?)");
                PreparedStatement debit = c.prepareStatement(
                        "UPDATE account SET balance = balance - ? WHERE id = ?");
                PreparedStatement byAccount = c.prepareStatement(
                        "SELECT COUNT(*), COALESCE(SUM(amount), 0) FROM orders WHERE account_id = ?");
                PreparedStatement report = c.prepareStatement(
                        "SELECT a.owner, COUNT(o.id), COALESCE(SUM(o.amount), 0) FROM account a"
                                + " JOIN orders o ON o.account_id = a.id"
                                + " WHERE a.id BETWEEN ? AND ? GROUP BY a.owner ORDER BY 3 DESC, 1"
                                + " LIMIT 10");
                PreparedStatement prune = c.prepareStatement(
                        "DELETE FROM orders WHERE account_id = ? AND amount < ?");
                PreparedStatement bump = c.prepareStatement(
                        "UPDATE counter SET v = v + ? WHERE k = ?")) {
            c.setAutoCommit(false);
            for (int tx = 0; tx < transactions; tx++) {
                int ops = 1 + r.nextInt(4);
                for (int op = 0; op < ops; op++) {
                    int account = first + r.nextInt(ACCOUNTS_PER_THREAD);
                    int amount = 1 + r.nextInt(500);
                    insert.setLong(1, orderId++);
                    insert.setInt(2, account);
                    insert.setInt(3, amount);
                    insert.setString(4, "order " + tx + "/" + op + " for " + account);
                    insert.setLong(5, tx);
                    insert.executeUpdate();
                    debit.setInt(1, amount);
                    debit.setInt(2, account);
                    debit.executeUpdate();
                }
                if (tx % 5 == 0) {
                    byAccount.setInt(1, first + r.nextInt(ACCOUNTS_PER_THREAD));
                    sum = sum * 31 + fold(byAccount.executeQuery());
                }
                if (tx % 50 == 0) {
                    int from = first + r.nextInt(ACCOUNTS_PER_THREAD - 200);
                    report.setInt(1, from);
                    report.setInt(2, from + 200);
                    sum = sum * 31 + fold(report.executeQuery());
                }
                if (tx % 97 == 0) {
                    prune.setInt(1, first + r.nextInt(ACCOUNTS_PER_THREAD));
                    prune.setInt(2, 50);
                    sum += prune.executeUpdate();
                }
                // Last statement of the transaction: one shared row, so no lock cycles.
                bump.setInt(1, 1 + r.nextInt(10));
                bump.setInt(2, r.nextInt(COUNTERS));
                bump.executeUpdate();
                c.commit();
            }
        }
        return sum;
    }

    /** Folds every column of every row into one number, and closes the result set. */
    static long fold(ResultSet rs) throws SQLException {
        try (rs) {
            long h = 1;
            int columns = rs.getMetaData().getColumnCount();
            while (rs.next()) {
                for (int i = 1; i <= columns; i++) {
                    String v = rs.getString(i);
                    h = h * 1_000_003 + (v == null ? 0 : v.hashCode());
                }
            }
            return h;
        }
    }
}
