import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.lang.instrument.ClassDefinition;
import java.lang.instrument.ClassFileTransformer;
import java.lang.instrument.Instrumentation;
import java.security.ProtectionDomain;

/**
 * A java.lang.instrument agent of the kind APM agents are: its transformer
 * takes part in retransformation, and at start it retransforms
 * java.lang.Thread and the class named by its argument, redefines both with
 * their class files as they are on disk, then retransforms them again.
 * Run from a jar whose manifest has Premain-Class: RetransformingAgent,
 * Can-Retransform-Classes: true and Can-Redefine-Classes: true. Prints
 * "agent changed <n> classes" when all of it succeeded.
 */
public class RetransformingAgent {
    public static void premain(String target, Instrumentation inst) throws Exception {
        String targetPath = target.replace('.', '/');
        ClassFileTransformer copying = new ClassFileTransformer() {
            @Override
            public byte[] transform(ClassLoader loader, String name, Class<?> redefined,
                    ProtectionDomain domain, byte[] classFile) {
                // A copy of the bytes it was given: a change, as far as the JVM knows.
                boolean wanted = "java/lang/Thread".equals(name) || targetPath.equals(name);
                return wanted ? classFile.clone() : null;
            }
        };
        inst.addTransformer(copying, true);
        Class<?> user = Class.forName(target, false, ClassLoader.getSystemClassLoader());
        int changed = 0;
        for (Class<?> c : new Class<?>[] {Thread.class, user}) {
            inst.retransformClasses(c);
            inst.redefineClasses(new ClassDefinition(c, classFileOf(c)));
            inst.retransformClasses(c);
            changed++;
        }
        System.out.println("agent changed " + changed + " classes");
    }

    static byte[] classFileOf(Class<?> c) throws Exception {
        String name = c.getName();
        String file = name.substring(name.lastIndexOf('.') + 1) + ".class";
        try (InputStream in = c.getResourceAsStream(file)) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            byte[] buffer = new byte[8192];
            for (int n; (n = in.read(buffer)) > 0; ) {
                out.write(buffer, 0, n);
            }
            return out.toByteArray();
        }
    }
}
