import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.lang.instrument.ClassFileTransformer;
import java.lang.instrument.Instrumentation;
import java.security.ProtectionDomain;
import java.util.Arrays;

/**
 * A java.lang.instrument agent that reports, for each class whose internal
 * name starts with its argument, whether the class file it is handed at
 * load is the one on the class path byte for byte: it prints
 * "bytes <name> same" or "bytes <name> changed". Loaded after a JVMTI
 * agent that transforms classes, it sees that agent's output, so it tells
 * which classes the agent left as they were. Changes nothing itself. Run
 * from a jar whose manifest has Premain-Class: ClassBytesAgent.
 */
public class ClassBytesAgent {
    public static void premain(String prefix, Instrumentation inst) {
        inst.addTransformer(new ClassFileTransformer() {
            @Override
            public byte[] transform(ClassLoader loader, String name, Class<?> redefined,
                    ProtectionDomain domain, byte[] classFile) {
                if (name != null && loader != null && name.startsWith(prefix)) {
                    boolean same = Arrays.equals(classFile, onDisk(loader, name));
                    System.out.println("bytes " + name + (same ? " same" : " changed"));
                }
                return null;
            }
        });
    }

    static byte[] onDisk(ClassLoader loader, String name) {
        try (InputStream in = loader.getResourceAsStream(name + ".class")) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            byte[] buffer = new byte[8192];
            for (int n; (n = in.read(buffer)) > 0; ) {
                out.write(buffer, 0, n);
            }
            return out.toByteArray();
        } catch (Exception e) {
            return null;
        }
    }
}
