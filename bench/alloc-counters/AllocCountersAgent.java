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
import org.objectweb.asm.Type;
import org.objectweb.asm.commons.LocalVariablesSorter;

/**
 * A measuring prototype for issue 11 (not the agent): the cost of counting every allocation
 * in the bytecode. After each NEW, NEWARRAY, ANEWARRAY and MULTIANEWARRAY of every class
 * (java.base retransformed at start) it calls a static method of AllocCounters with a site
 * number fixed at rewrite time; arrays pass their length too. How AllocCounters counts is the
 * mode (see that class). With mode "context" every call site also keeps a calling-context
 * value (probabilistic calling context: v = 3 * v + site before the call, restored after) in a
 * per-thread slot, to measure what exact traces by context would add. With mode "frame" the
 * context is a window of the last three call sites (21 bits each) kept in a field that
 * PatchThread adds to java.lang.Thread: each method reads it once at entry into a local of its
 * own (and clears it), sets it before each call to (local << 21 | call site), and counts its
 * allocations under (site, local) in a hash table; nothing is undone after a call, so an
 * exception unwinding through frames leaves nothing to repair.
 *
 *   java -Xbootclasspath/a:<dir> -javaagent:alloc-counters.jar=MODE ...
 */
public final class AllocCountersAgent implements ClassFileTransformer {
    private static final AtomicInteger SITES = new AtomicInteger(1);
    private static final String COUNTERS = "AllocCounters";
    private final boolean context;
    private final boolean inject;
    private final boolean frame;
    private static boolean consume = true;
    private static boolean leaves = true;
    private static boolean calls = true;

    private AllocCountersAgent(boolean context, boolean inject, boolean frame) {
        this.context = context;
        this.inject = inject;
        this.frame = frame;
    }

    public static void premain(String args, Instrumentation inst) throws Exception {
        String mode = args == null ? "atomic" : args;
        AllocCounters.setMode(mode);
        AllocCountersAgent agent =
                new AllocCountersAgent(mode.equals("context"), !mode.equals("rewrite"),
                        mode.startsWith("frame"));
        // frame-nc: nothing cleared at entry; frame-leaf: methods that neither call nor
        // allocate get no entry code; frame-both: both.
        consume = !mode.equals("frame-nc") && !mode.equals("frame-both");
        leaves = !mode.equals("frame-leaf") && !mode.equals("frame-both");
        // frame-nocalls: contexts read and counted under, never set at call sites.
        calls = !mode.equals("frame-nocalls");
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
                        + AllocCounters.total() + " allocations counted, " + AllocCounters.keys()
                        + " (site, context) keys")));
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
            java.util.Set<String> busy = new java.util.HashSet<>();
            if (frame && !leaves) {
                reader.accept(new ClassVisitor(Opcodes.ASM9) {
                    @Override
                    public MethodVisitor visitMethod(int access, String n, String d, String s,
                            String[] e) {
                        String key = n + d;
                        return new MethodVisitor(Opcodes.ASM9) {
                            @Override
                            public void visitMethodInsn(int o, String w, String m, String x,
                                    boolean i) {
                                busy.add(key);
                            }

                            @Override
                            public void visitInvokeDynamicInsn(String m, String x,
                                    org.objectweb.asm.Handle h, Object... a) {
                                busy.add(key);
                            }

                            @Override
                            public void visitTypeInsn(int o, String t) {
                                if (o == Opcodes.NEW || o == Opcodes.ANEWARRAY) {
                                    busy.add(key);
                                }
                            }

                            @Override
                            public void visitIntInsn(int o, int v) {
                                if (o == Opcodes.NEWARRAY) {
                                    busy.add(key);
                                }
                            }

                            @Override
                            public void visitMultiANewArrayInsn(String t, int dims) {
                                busy.add(key);
                            }
                        };
                    }
                }, 0);
            }
            reader.accept(new ClassVisitor(Opcodes.ASM9, writer) {
                @Override
                public MethodVisitor visitMethod(int access, String n, String d, String s,
                        String[] e) {
                    MethodVisitor next = super.visitMethod(access, n, d, s, e);
                    if (frame && (access & (Opcodes.ACC_ABSTRACT | Opcodes.ACC_NATIVE)) == 0
                            && (leaves || busy.contains(n + d))) {
                        return new FrameCounting(access, d, next);
                    }
                    return inject && !frame ? new Counting(next, context) : next;
                }
            }, frame ? ClassReader.EXPAND_FRAMES : 0);
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

    /** Mode "frame": the context window in a field of the thread, a local per method. */
    private static final class FrameCounting extends LocalVariablesSorter {
        private static final String THREAD = "java/lang/Thread";
        private int context;

        FrameCounting(int access, String descriptor, MethodVisitor next) {
            super(Opcodes.ASM9, access, descriptor, next);
        }

        @Override
        public void visitCode() {
            super.visitCode();
            context = newLocal(Type.LONG_TYPE);
            mv.visitMethodInsn(Opcodes.INVOKESTATIC, THREAD, "currentThread",
                    "()Ljava/lang/Thread;", false);
            if (consume) {
                mv.visitInsn(Opcodes.DUP);
            }
            mv.visitFieldInsn(Opcodes.GETFIELD, THREAD, "hprofContext", "J");
            mv.visitVarInsn(Opcodes.LSTORE, context);
            if (consume) {
                mv.visitInsn(Opcodes.LCONST_0);
                mv.visitFieldInsn(Opcodes.PUTFIELD, THREAD, "hprofContext", "J");
            }
        }

        private void site() {
            mv.visitLdcInsn(SITES.getAndIncrement());
            mv.visitVarInsn(Opcodes.LLOAD, context);
        }

        @Override
        public void visitTypeInsn(int opcode, String type) {
            super.visitTypeInsn(opcode, type);
            if (opcode == Opcodes.NEW) {
                site();
                mv.visitMethodInsn(Opcodes.INVOKESTATIC, COUNTERS, "objectIn", "(IJ)V", false);
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
            mv.visitInsn(Opcodes.DUP);
            mv.visitInsn(Opcodes.ARRAYLENGTH);
            site();
            mv.visitMethodInsn(Opcodes.INVOKESTATIC, COUNTERS, "arrayIn", "(IIJ)V", false);
        }

        @Override
        public void visitMethodInsn(int opcode, String owner, String name, String d,
                boolean itf) {
            if (!calls) {
                super.visitMethodInsn(opcode, owner, name, d, itf);
                return;
            }
            mv.visitMethodInsn(Opcodes.INVOKESTATIC, THREAD, "currentThread",
                    "()Ljava/lang/Thread;", false);
            mv.visitVarInsn(Opcodes.LLOAD, context);
            mv.visitIntInsn(Opcodes.BIPUSH, 21);
            mv.visitInsn(Opcodes.LSHL);
            mv.visitLdcInsn((long) (SITES.getAndIncrement() & 0x1FFFFF));
            mv.visitInsn(Opcodes.LOR);
            mv.visitFieldInsn(Opcodes.PUTFIELD, THREAD, "hprofContext", "J");
            super.visitMethodInsn(opcode, owner, name, d, itf);
        }

        @Override
        public void visitMaxs(int maxStack, int maxLocals) {
            super.visitMaxs(maxStack + 6, maxLocals);
        }
    }
}
