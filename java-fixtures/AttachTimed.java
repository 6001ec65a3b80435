import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;

/**
 * A running program told what to do, one command a line on its standard
 * input, so that a test knows exactly which calls it made while a profile
 * was attached. Prints `READY` (flushed) once warmed up (10 calls of
 * `AttachTarget.hot()`), then answers each command with one flushed line:
 *
 *   work N   calls run(N), which calls AttachTarget.hot() N times:
 *            `worked N`
 *   probe    `probe=<b>`, the byte code offset at which probe() calls the
 *            stack walker: larger while its class is rewritten (an
 *            injected call comes first), the same as before the attach
 *            once its own byte code is back
 *   fail     calls fail(), which calls AttachTarget.hot() once and throws,
 *            caught in serve(): `failed`
 *   enter    serves commands in a new serve() frame until `leave`:
 *            `entered`, then `left` (a call that can span a stop and the
 *            next attach)
 *   exit     (or the end of the input) exits with code 42
 */
public class AttachTimed {
    static long sink;

    static void run(int calls) {
        for (int i = 0; i < calls; i++) {
            sink += AttachTarget.hot();
        }
    }

    static void fail() {
        sink += AttachTarget.hot();
        throw new IllegalStateException("failing on purpose");
    }

    static int probe() {
        return StackWalker.getInstance().walk(frames -> frames.findFirst().get().getByteCodeIndex());
    }

    static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    /** Serves commands until `leave` (nested) or the end; false on `exit`. */
    static boolean serve(BufferedReader in, boolean nested) throws IOException {
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.trim().split(" ");
            switch (words[0]) {
                case "work":
                    run(Integer.parseInt(words[1]));
                    say("worked " + words[1]);
                    break;
                case "fail":
                    try {
                        fail();
                    } catch (IllegalStateException expected) {
                        say("failed");
                    }
                    break;
                case "probe":
                    say("probe=" + probe());
                    break;
                case "enter":
                    say("entered");
                    if (!serve(in, true)) {
                        return false;
                    }
                    say("left");
                    break;
                case "leave":
                    if (nested) {
                        return true;
                    }
                    break;
                case "exit":
                    return false;
                default:
                    say("unknown command " + line);
            }
        }
        return false;
    }

    public static void main(String[] args) throws IOException {
        run(10);
        say("READY");
        serve(new BufferedReader(new InputStreamReader(System.in)), false);
        System.exit(42);
    }
}
