/** Startup workload: the smallest program, to see what loading a profiler costs. */
public final class Hello {
    public static void main(String[] args) {
        System.out.println("Hello, world");
        System.out.println("checksum=hello");
    }
}
