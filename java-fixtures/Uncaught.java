/** Throws from main: the JVM prints the stack trace and exits 1. */
public class Uncaught {
    public static void main(String[] args) {
        System.out.println("about to throw");
        throw new IllegalStateException("boom");
    }
}
