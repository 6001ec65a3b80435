/**
 * What a program can tell of the thread that runs main(): whether it is the thread that ran the
 * main class's static initializer, a thread-local that initializer set, and its id (1 on JDK 11
 * to 21 and 3 on JDK 25 without an agent). Prints the three, one per line.
 */
public class MainIdentity {
    static final Thread INIT = Thread.currentThread();
    static final ThreadLocal<String> TL = new ThreadLocal<>();

    static {
        TL.set("from-init");
    }

    public static void main(String[] args) {
        System.out.println(Thread.currentThread() == INIT);
        System.out.println(TL.get());
        System.out.println(Thread.currentThread().getId());
    }
}
