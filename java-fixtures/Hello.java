/** Smallest possible workload: prints one line and exits 0. */
public class Hello {
    public static void main(String[] args) {
        System.out.println("Hello, hprof");
    }
}
