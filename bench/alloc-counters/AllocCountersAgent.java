import java.lang.instrument.ClassFileTransformer;
import java.lang.instrument.Instrumentation;
import java.security.ProtectionDomain;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.objectweb.asm.ClassReader;
import org.objectweb.asm.ClassVisitor;
import org.objectweb.asm.ClassWriter;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;

/**
 * A measuring prototype for issue 11 (not the agent): the cost of counting every allocation
 * in the bytecode. After each NEW, NEWARRAY, ANEWARRAY and MULTIANEWARRAY of every class
 * (java.base retransformed at start) it calls a static method of AllocCounters with a site
 * number fixed at rewrite time; arrays pass their length too. How AllocCounters counts is the
 * mode (see that class). With mode "context" every call site also keeps a calling-context
 * value (probabilistic calling context: v = 3 * v + site before the call, restored after) in a
 * per-thread slot, to measure what exact traces by context would add.
 *
 *   java -Xbootclasspath/a:<dir> -javaagent:alloc-counters.jar=MODE ...
 */
public final class AllocCountersAgent implements ClassFileTransformer {
    private static final AtomicInteger SITES = new AtomicInteger(1);
    private static final String COUNTERS = "AllocCounters";
    private final boolean context;
    private final boolean inject;

    private AllocCountersAgent(boolean context, boolean inject) {
        this.context = context;
        this.inject = inject;
    }

    public static void premain(String args, Instrumentation inst) throws Exception {
        String mode = args == null ? "atomic" : args;
        AllocCounters.setMode(mode);
        AllocCountersAgent agent =
                new AllocCountersAgent(mode.equals("context"), !mode.equals("rewrite"));
        inst.addTransformer(agent, true);
        List<Class<?>> loaded = new ArrayList<>();
        for (Class<?> c : inst.getAllLoadedClasses()) {
            if (inst.isModifiableClass(c) && !c.getName().startsWith("AllocCounters")
                    && !c.getName().startsWith("org.objectweb.asm")) {
                loaded.add(c);
            }
        }
        int failed = 0;
        for (Class<?> c : loaded) {
            try {
                inst.retransformClasses(c);
            } catch (Throwable t) {
                failed++;
            }
        }
        int refused = failed;
        Runtime.getRuntime().addShutdownHook(new Thread(() -> System.err.println(
                "alloc-counters: mode " + mode + ", " + SITES.get() + " sites, "
                        + loaded.size() + " classes retransformed (" + refused + " refused), "
                        + AllocCounters.total() + " allocations counted")));
    }

    @Override
    public byte[] transform(Module module, ClassLoader loader, String name, Class<?> redefined,
            ProtectionDomain domain, byte[] bytes) {
        if (name == null || name.startsWith(COUNTERS) || name.startsWith("org/objectweb/asm")
                || name.startsWith("AllocCountersAgent")) {
            return null;
        }
        try {
            ClassReader reader = new ClassReader(bytes);
            ClassWriter writer = new ClassWriter(reader, 0);
            reader.accept(new ClassVisitor(Opcodes.ASM9, writer) {
                @Override
                public MethodVisitor visitMethod(int access, String n, String d, String s,
                        String[] e) {
                    MethodVisitor next = super.visitMethod(access, n, d, s, e);
                    return inject ? new Counting(next, context) : next;
                }
            }, 0);
            return writer.toByteArray();
        } catch (Throwable t) {
            return null;
        }
    }

    private static final class Counting extends MethodVisitor {
        private final boolean context;

        Counting(MethodVisitor next, boolean context) {
            super(Opcodes.ASM9, next);
            this.context = context;
        }

        private void site() {
            super.visitLdcInsn(SITES.getAndIncrement());
        }

        @Override
        public void visitTypeInsn(int opcode, String type) {
            super.visitTypeInsn(opcode, type);
            if (opcode == Opcodes.NEW) {
                site();
                super.visitMethodInsn(Opcodes.INVOKESTATIC, COUNTERS, "object", "(I)V", false);
            } else if (opcode == Opcodes.ANEWARRAY) {
                array();
            }
        }

        @Override
        public void visitIntInsn(int opcode, int operand) {
            super.visitIntInsn(opcode, operand);
            if (opcode == Opcodes.NEWARRAY) {
                array();
            }
        }

        @Override
        public void visitMultiANewArrayInsn(String descriptor, int dims) {
            super.visitMultiANewArrayInsn(descriptor, dims);
            array();
        }

        private void array() {
            super.visitInsn(Opcodes.DUP);
            super.visitInsn(Opcodes.ARRAYLENGTH);
            site();
            super.visitMethodInsn(Opcodes.INVOKESTATIC, COUNTERS, "array", "(II)V", false);
        }

        @Override
        public void visitMethodInsn(int opcode, String owner, String name, String d,
                boolean itf) {
            if (!context) {
                super.visitMethodInsn(opcode, owner, name, d, itf);
                return;
            }
            int callSite = SITES.getAndIncrement();
            super.visitLdcInsn(callSite);
            super.visitMethodInsn(Opcodes.INVOKESTATIC, COUNTERS, "enter", "(I)V", false);
            super.visitMethodInsn(opcode, owner, name, d, itf);
            super.visitLdcInsn(callSite);
            super.visitMethodInsn(Opcodes.INVOKESTATIC, COUNTERS, "leave", "(I)V", false);
        }

        @Override
        public void visitMaxs(int maxStack, int maxLocals) {
            super.visitMaxs(maxStack + 3, maxLocals);
        }
    }
}
