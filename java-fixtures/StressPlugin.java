/** Loaded by Stress "unload" into many class loaders; uses java.lang only. */
public class StressPlugin {
    public static int value(int i) {
        return i * 3 + 1;
    }
}
