import java.io.InputStream;
import java.nio.charset.StandardCharsets;

/**
 * Defines a class named {@code H(1)T} at run time, as a class-file renamer
 * or a generator may: the JVM allows parentheses in class names, which the
 * Java language does not. The class is {@link Hq1qT}'s bytes with every
 * "Hq1qT" replaced by "H(1)T" (the same length: the name only occurs in
 * the constant pool's UTF8 entries, the source file "H(1)T.java"
 * included). Runs it (5000 {@code H(1)T} objects kept, half a second in
 * {@code H(1)T.spin}), then prints {@code class=H(1)T}.
 */
public class OddName {
    public static void main(String[] args) throws Exception {
        byte[] template;
        try (InputStream in = OddName.class.getResourceAsStream("Hq1qT.class")) {
            template = in.readAllBytes();
        }
        byte[] renamed = replaced(template, "Hq1qT", "H(1)T");
        ClassLoader loader = new ClassLoader(OddName.class.getClassLoader()) {
            @Override
            protected Class<?> findClass(String name) throws ClassNotFoundException {
                if (name.equals("H(1)T")) {
                    return defineClass(name, renamed, 0, renamed.length);
                }
                throw new ClassNotFoundException(name);
            }
        };
        Class<?> odd = loader.loadClass("H(1)T");
        ((Runnable) odd.getDeclaredConstructor().newInstance()).run();
        System.out.println("class=" + odd.getName());
    }

    /** {@code bytes} with every {@code from} replaced by {@code to} (as long). */
    static byte[] replaced(byte[] bytes, String from, String to) {
        byte[] a = from.getBytes(StandardCharsets.US_ASCII);
        byte[] b = to.getBytes(StandardCharsets.US_ASCII);
        byte[] out = bytes.clone();
        for (int at = 0; at + a.length <= out.length; at++) {
            boolean match = true;
            for (int i = 0; i < a.length && match; i++) {
                match = out[at + i] == a[i];
            }
            if (match) {
                System.arraycopy(b, 0, out, at, b.length);
            }
        }
        return out;
    }
}
