import java.io.InputStream;
import java.lang.reflect.Method;

/**
 * Class churn: the same class ({@link ChurnPlugin}) defined in fresh class
 * loaders, as a plugin host or a script engine does.
 *
 * <ul>
 *   <li>{@code reload <n> [per]}: defines ChurnPlugin in {@code n} loaders, one after
 *       the other, calls {@code make(per)} (default 3) on each copy and drops it; prints
 *       {@code pieces=<n*per>} and {@code sum=<sum>} on two lines.
 *   <li>{@code distinct <n> [per]}: like {@code reload}, but copy {@code i} is renamed
 *       {@code Churn<i as 6 hex digits>} (and its nested class with it), as generated
 *       proxies and scripts get a fresh name each; prints the same two lines.
 *   <li>{@code unload <n> [per]}: like {@code distinct}, then collects the garbage until
 *       every copy's two classes have unloaded (their class objects weakly held; at most
 *       200 collections); prints the same two lines and {@code unloaded=<classes gone>}.
 *   <li>{@code soak <seconds>}: every second, 50 fresh loaders each define ChurnPlugin
 *       and 20 short threads each call {@code make(100)} on one of them; prints
 *       {@code READY} at start and {@code DONE rounds=<seconds>} at the end. Everything
 *       printed is independent of timing.
 * </ul>
 */
public class ClassChurn {
    static byte[] pluginBytes;

    public static void main(String[] args) throws Exception {
        try (InputStream in = ClassChurn.class.getResourceAsStream("ChurnPlugin.class")) {
            pluginBytes = in.readAllBytes();
        }
        switch (args[0]) {
            case "reload":
                reload(Integer.parseInt(args[1]), args.length > 2 ? Integer.parseInt(args[2]) : 3);
                break;
            case "distinct":
                distinct(Integer.parseInt(args[1]), args.length > 2 ? Integer.parseInt(args[2]) : 3);
                break;
            case "unload":
                unload(Integer.parseInt(args[1]), args.length > 2 ? Integer.parseInt(args[2]) : 3);
                break;
            case "soak":
                soak(Integer.parseInt(args[1]));
                break;
            default:
                throw new IllegalArgumentException(args[0]);
        }
    }

    static Method freshMake() throws Exception {
        ClassLoader loader = new ClassLoader(null) {
            @Override
            protected Class<?> findClass(String name) throws ClassNotFoundException {
                if (name.equals("ChurnPlugin")) {
                    return defineClass(name, pluginBytes, 0, pluginBytes.length);
                }
                if (name.equals("ChurnPlugin$Piece")) {
                    try (InputStream in = ClassChurn.class.getResourceAsStream("ChurnPlugin$Piece.class")) {
                        byte[] bytes = in.readAllBytes();
                        return defineClass(name, bytes, 0, bytes.length);
                    } catch (java.io.IOException e) {
                        throw new ClassNotFoundException(name, e);
                    }
                }
                throw new ClassNotFoundException(name);
            }
        };
        return loader.loadClass("ChurnPlugin").getMethod("make", int.class);
    }

    static void reload(int n, int per) throws Exception {
        long sum = 0;
        for (int i = 0; i < n; i++) {
            sum += (Long) freshMake().invoke(null, per);
        }
        System.out.println("pieces=" + ((long) n * per));
        System.out.println("sum=" + sum);
    }

    static byte[] pieceBytes() throws java.io.IOException {
        try (InputStream in = ClassChurn.class.getResourceAsStream("ChurnPlugin$Piece.class")) {
            return in.readAllBytes();
        }
    }

    /**
     * {@code bytes} with every "ChurnPlugin" replaced by {@code name} (as long): the
     * name only occurs in the constant pool's UTF8 entries (class names, descriptors,
     * the source file), whose lengths do not change.
     */
    static byte[] renamed(byte[] bytes, String name) {
        byte[] from = "ChurnPlugin".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        byte[] to = name.getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        byte[] out = bytes.clone();
        for (int i = 0; i + from.length <= out.length; i++) {
            if (java.util.Arrays.equals(out, i, i + from.length, from, 0, from.length)) {
                System.arraycopy(to, 0, out, i, to.length);
            }
        }
        return out;
    }

    static Method freshDistinctMake(int copy, byte[] pieceBytes) throws Exception {
        String name = String.format("Churn%06x", copy);
        byte[] plugin = renamed(pluginBytes, name);
        byte[] piece = renamed(pieceBytes, name);
        ClassLoader loader = new ClassLoader(null) {
            @Override
            protected Class<?> findClass(String wanted) throws ClassNotFoundException {
                if (wanted.equals(name)) {
                    return defineClass(wanted, plugin, 0, plugin.length);
                }
                if (wanted.equals(name + "$Piece")) {
                    return defineClass(wanted, piece, 0, piece.length);
                }
                throw new ClassNotFoundException(wanted);
            }
        };
        return loader.loadClass(name).getMethod("make", int.class);
    }

    static void distinct(int n, int per) throws Exception {
        byte[] piece = pieceBytes();
        long sum = 0;
        for (int i = 0; i < n; i++) {
            sum += (Long) freshDistinctMake(i, piece).invoke(null, per);
        }
        System.out.println("pieces=" + ((long) n * per));
        System.out.println("sum=" + sum);
    }

    static void unload(int n, int per) throws Exception {
        byte[] piece = pieceBytes();
        java.util.List<java.lang.ref.WeakReference<Class<?>>> classes = new java.util.ArrayList<>();
        long sum = 0;
        for (int i = 0; i < n; i++) {
            Method make = freshDistinctMake(i, piece);
            sum += (Long) make.invoke(null, per);
            Class<?> plugin = make.getDeclaringClass();
            classes.add(new java.lang.ref.WeakReference<>(plugin));
            Class<?> nested = Class.forName(plugin.getName() + "$Piece", false, plugin.getClassLoader());
            classes.add(new java.lang.ref.WeakReference<>(nested));
        }
        System.out.println("pieces=" + ((long) n * per));
        System.out.println("sum=" + sum);
        long gone = 0;
        for (int round = 0; round < 200 && gone < classes.size(); round++) {
            System.gc();
            Thread.sleep(10);
            gone = classes.stream().filter(c -> c.get() == null).count();
        }
        System.out.println("unloaded=" + gone);
    }

    static void soak(int seconds) throws Exception {
        System.out.println("READY");
        System.out.flush();
        long start = System.nanoTime();
        for (int round = 0; round < seconds; round++) {
            Method[] copies = new Method[50];
            for (int i = 0; i < copies.length; i++) {
                copies[i] = freshMake();
            }
            Thread[] threads = new Thread[20];
            for (int t = 0; t < threads.length; t++) {
                Method make = copies[t];
                threads[t] = new Thread(() -> {
                    try {
                        make.invoke(null, 100);
                    } catch (ReflectiveOperationException e) {
                        throw new IllegalStateException(e);
                    }
                }, "churn-" + t);
                threads[t].start();
            }
            for (Thread t : threads) {
                t.join();
            }
            long next = start + (round + 1) * 1_000_000_000L;
            long wait = next - System.nanoTime();
            if (wait > 0) {
                Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
            }
        }
        System.out.println("DONE rounds=" + seconds);
    }
}
