import java.io.BufferedReader;
import java.io.InputStreamReader;

/**
 * Holds args[0] million small objects (default 10), prints READY (flushed),
 * then waits for a line on stdin and calls System.exit(0): a heap dump
 * attached meanwhile (hundreds of MB) is still being written when the JVM
 * exits.
 */
public class ExitDuringDump {
    static final class Cell {
        int value;
        Cell(int value) {
            this.value = value;
        }
    }

    static Cell[] held;

    public static void main(String[] args) throws Exception {
        int millions = args.length > 0 ? Integer.parseInt(args[0]) : 10;
        held = new Cell[millions * 1_000_000];
        for (int i = 0; i < held.length; i++) {
            held[i] = new Cell(i);
        }
        System.out.println("READY");
        System.out.flush();
        new BufferedReader(new InputStreamReader(System.in)).readLine();
        System.exit(0);
    }
}
