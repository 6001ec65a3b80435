import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import org.objectweb.asm.ClassReader;
import org.objectweb.asm.ClassVisitor;
import org.objectweb.asm.ClassWriter;
import org.objectweb.asm.Opcodes;

/**
 * Writes the running JDK's java.lang.Thread with one more field, `public long hprofContext`,
 * to DIR/java/lang/Thread.class, for `--patch-module java.base=DIR`: where mode "frame" of the
 * prototype keeps each thread's calling context (a field of the thread itself, read and written
 * like any field by compiled code, instead of a slot found from the thread id).
 */
public final class PatchThread {
    public static void main(String[] args) throws Exception {
        byte[] original;
        try (InputStream in = Object.class.getResourceAsStream("/java/lang/Thread.class")) {
            original = in.readAllBytes();
        }
        ClassReader reader = new ClassReader(original);
        ClassWriter writer = new ClassWriter(reader, 0);
        reader.accept(new ClassVisitor(Opcodes.ASM9, writer) {
            @Override
            public void visitEnd() {
                super.visitField(Opcodes.ACC_PUBLIC, "hprofContext", "J", null, null).visitEnd();
                super.visitEnd();
            }
        }, 0);
        Path out = Path.of(args[0], "java", "lang", "Thread.class");
        Files.createDirectories(out.getParent());
        Files.write(out, writer.toByteArray());
    }
}
