/** Prints a line, then exits through System.exit(3): the agent must keep the exit code. */
public class ExitCode {
    public static void main(String[] args) {
        System.out.println("exiting with 3");
        System.out.flush();
        System.exit(3);
    }
}
