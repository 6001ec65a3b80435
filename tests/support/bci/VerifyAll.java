import java.io.BufferedInputStream;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Array;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * The JVM side of tests/bci_jrt.rs. Three modes:
 *
 * "VerifyAll LIST CANARIES [patched]" loads and links every class named in
 * the LIST file (binary names, one a line) and prints one line per class
 * that fails:
 *
 *   FAIL <VerifyError|ClassFormatError|other> <class> <throwable>
 *
 * Linking verifies: the test runs this JVM with -XX:+BytecodeVerificationLocal
 * so that boot and platform classes are verified too, with the rewritten
 * classes patched into their own modules (--patch-module), i.e. each in its
 * real loader, package and module. Class.forName(name, false, ...) loads
 * without initialising; reflecting on the declared methods makes HotSpot
 * link the class (JVM_GetClassDeclaredMethods calls link_class), which runs
 * the verifier. Then:
 *  - the canaries: each class named in the CANARIES file ("-" for none), a
 *    deliberately broken class the test patches into a package of each
 *    module next to the rewritten classes, must fail the same way with
 *    VerifyError, proving that the classes of every module are verified
 *    ("CANARY MISSED <class> <what happened>" for each one that is not,
 *    then "CANARIES rejected=N missed=N");
 *  - with "patched", a small workload runs with the injected calls counted
 *    by java.lang.HprofRsVerifyTracker ("TRACKER calls=N returns=M");
 *  - "SUMMARY linked=N VerifyError=N ClassFormatError=N other=N".
 *
 * "VerifyAll exempt DUMP PATCH" (JDK 24+, with --add-opens
 * java.base/jdk.internal.classfile.impl.verifier=ALL-UNNAMED) verifies the
 * classes HotSpot never verifies, java.lang.Object, Class, String and
 * Throwable and the subclasses of jdk.internal.reflect.MagicAccessorImpl
 * (JDK 21 and older), as rewritten under PATCH/<module>/, with the JDK's
 * port of HotSpot's verifier (jdk.internal.classfile.impl.verifier), called
 * past the same name check, against the class hierarchy of the image in
 * DUMP (DumpJrt's file, so a JDK 17 image is checked as JDK 17). A rewritten
 * class must give the same errors as its original (none, but for a few the
 * port cannot resolve), and the canary, broken code under an exempt name,
 * must fail. Prints "EXEMPT ORIGINAL FAILS <class> <errors>" for those
 * few, "EXEMPT FAIL <class> <errors>" per failure, and
 * "EXEMPT checked=N failed=N originals-failed=N canary-errors=N".
 *
 * "VerifyAll diff ORIGINAL REWRITTEN" (JDK 24+) verifies each class of the
 * REWRITTEN dump and its original from the ORIGINAL one with
 * java.lang.classfile's verifier, the classes of ORIGINAL then the running
 * JDK's making the class hierarchy: rewriting must add no error (numbers
 * blanked: offsets move). Prints "DIFF NEW <class> <original errors> =>
 * <rewritten errors>" per class with new errors, then
 * "DIFF checked=N originals-failing=N new=N".
 *
 * "VerifyAll write-canaries SPEC" writes the canaries: SPEC has one
 * "internal/class/Name file" pair a line.
 */
public class VerifyAll {
    public static void main(String[] args) throws Exception {
        if (args[0].equals("write-canaries")) {
            for (String line : Files.readAllLines(Paths.get(args[1]))) {
                String[] nameAndFile = line.split(" ", 2);
                Files.write(Paths.get(nameAndFile[1]), brokenClass(nameAndFile[0]));
            }
            return;
        }
        if (args[0].equals("exempt")) {
            exempt(Paths.get(args[1]), Paths.get(args[2]));
            return;
        }
        if (args[0].equals("diff")) {
            diff(Paths.get(args[1]), Paths.get(args[2]));
            return;
        }
        List<String> names = Files.readAllLines(Paths.get(args[0]));
        List<String> canaries = args[1].equals("-") ? new ArrayList<>() : Files.readAllLines(Paths.get(args[1]));
        boolean patched = args.length > 2 && args[2].equals("patched");
        ClassLoader loader = ClassLoader.getSystemClassLoader();
        Map<String, Integer> failures = new TreeMap<>();
        failures.put("VerifyError", 0);
        failures.put("ClassFormatError", 0);
        failures.put("other", 0);
        int linked = 0;
        for (String name : names) {
            if (name.isEmpty()) {
                continue;
            }
            try {
                Class<?> c = Class.forName(name, false, loader);
                c.getDeclaredMethods();
                linked++;
            } catch (Throwable t) {
                String kind = t instanceof VerifyError ? "VerifyError"
                        : t instanceof ClassFormatError ? "ClassFormatError" : "other";
                failures.merge(kind, 1, Integer::sum);
                System.out.println("FAIL " + kind + " " + name + " " + oneLine(t));
            }
        }
        canaries(canaries, loader);
        if (patched) {
            workload();
        }
        System.out.println("SUMMARY linked=" + linked + " VerifyError=" + failures.get("VerifyError")
                + " ClassFormatError=" + failures.get("ClassFormatError") + " other=" + failures.get("other"));
    }

    private static String oneLine(Object o) {
        return String.valueOf(o).replace('\n', ' ');
    }

    /** Class {@code name} with static void broken() { iconst_0; pop; return } and max_stack 0. */
    private static byte[] brokenClass(String name) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(bytes);
        out.writeInt(0xCAFEBABE);
        out.writeShort(0);
        out.writeShort(52);
        out.writeShort(8);
        out.writeByte(1);
        out.writeUTF(name); // #1
        out.writeByte(7);
        out.writeShort(1); // #2
        out.writeByte(1);
        out.writeUTF("java/lang/Object"); // #3
        out.writeByte(7);
        out.writeShort(3); // #4
        out.writeByte(1);
        out.writeUTF("broken"); // #5
        out.writeByte(1);
        out.writeUTF("()V"); // #6
        out.writeByte(1);
        out.writeUTF("Code"); // #7
        out.writeShort(0x0031); // public final super
        out.writeShort(2);
        out.writeShort(4);
        out.writeShort(0); // interfaces
        out.writeShort(0); // fields
        out.writeShort(1); // methods
        out.writeShort(0x0009);
        out.writeShort(5);
        out.writeShort(6);
        out.writeShort(1);
        out.writeShort(7);
        out.writeInt(15);
        out.writeShort(0); // max_stack: too small for iconst_0
        out.writeShort(0);
        out.writeInt(3);
        out.write(new byte[] {0x03, 0x57, (byte) 0xb1});
        out.writeShort(0);
        out.writeShort(0);
        out.writeShort(0); // class attributes
        return bytes.toByteArray();
    }

    private static void canaries(List<String> names, ClassLoader loader) {
        int rejected = 0;
        int missed = 0;
        for (String name : names) {
            try {
                Class.forName(name, false, loader).getDeclaredMethods();
                System.out.println("CANARY MISSED " + name + " linked without a VerifyError");
                missed++;
            } catch (VerifyError e) {
                rejected++;
            } catch (Throwable t) {
                System.out.println("CANARY MISSED " + name + " " + oneLine(t));
                missed++;
            }
        }
        System.out.println("CANARIES rejected=" + rejected + " missed=" + missed);
    }

    /** Runs JDK code (all of it instrumented) with the tracker counting. */
    private static void workload() throws Exception {
        Class<?> tracker = Class.forName("java.lang.HprofRsVerifyTracker");
        Field engaged = tracker.getField("engaged");
        engaged.setInt(null, 1);
        List<String> words = new ArrayList<>();
        for (int i = 0; i < 2000; i++) {
            words.add(String.format("w%05d", (i * 7919) % 2000));
        }
        Collections.sort(words);
        Map<String, Integer> counts = new HashMap<>();
        for (String w : words) {
            counts.merge(w.substring(0, 3), 1, Integer::sum);
        }
        StringBuilder sb = new StringBuilder();
        counts.forEach((k, v) -> sb.append(k).append('=').append(v).append(';'));
        engaged.setInt(null, 0);
        long calls = tracker.getField("calls").getLong(null);
        long returns = tracker.getField("returns").getLong(null);
        System.out.println("TRACKER calls=" + calls + " returns=" + returns + " (" + sb.length() + " chars)");
    }

    /** Reads a DumpJrt file: class bytes and module, by internal name. */
    private static void readDump(Path dump, Map<String, byte[]> image, Map<String, String> modules)
            throws IOException {
        try (DataInputStream in = new DataInputStream(new BufferedInputStream(new FileInputStream(dump.toFile())))) {
            while (in.available() > 0) {
                String module = in.readUTF();
                String name = in.readUTF();
                byte[] bytes = new byte[in.readInt()];
                in.readFully(bytes);
                image.put(name, bytes);
                modules.put(name, module);
            }
        }
    }

    /** Calls into java.lang.classfile and its verifier by reflection (this file compiles for Java 11). */
    private static final class Verifier {
        private final Object classFile;
        private final Method parse;
        private final Method verifyFormat;
        private final Method superclass;
        private final Method asInternalName;
        private final Constructor<?> wrapper;
        private final Constructor<?> verifier;
        private final Method verifyClass;
        private final Object resolver;

        /**
         * The class hierarchy is {@code image}'s, then (with {@code
         * runningJdk}) the running JDK's.
         */
        Verifier(Map<String, byte[]> image, boolean runningJdk) throws ReflectiveOperationException {
            Class<?> cf = Class.forName("java.lang.classfile.ClassFile");
            verifyFormat = cf.getMethod("verify", byte[].class);
            Class<?> model = Class.forName("java.lang.classfile.ClassModel");
            superclass = model.getMethod("superclass");
            asInternalName = Class.forName("java.lang.classfile.constantpool.ClassEntry").getMethod("asInternalName");
            Class<?> resolverType = Class.forName("java.lang.classfile.ClassHierarchyResolver");
            Method descriptorString = Class.forName("java.lang.constant.ClassDesc").getMethod("descriptorString");
            Function<Object, InputStream> lookup = desc -> {
                try {
                    String d = (String) descriptorString.invoke(desc);
                    byte[] bytes = image.get(d.substring(1, d.length() - 1));
                    return bytes == null ? null : new ByteArrayInputStream(bytes);
                } catch (ReflectiveOperationException e) {
                    throw new IllegalStateException(e);
                }
            };
            Object fromImage = resolverType.getMethod("ofResourceParsing", Function.class).invoke(null, lookup);
            resolver = runningJdk
                    ? resolverType.getMethod("orElse", resolverType)
                            .invoke(fromImage, resolverType.getMethod("defaultResolver").invoke(null))
                    : fromImage;
            Class<?> option = Class.forName("java.lang.classfile.ClassFile$Option");
            Object options = Array.newInstance(option, 1);
            Array.set(options, 0, Class.forName("java.lang.classfile.ClassFile$ClassHierarchyResolverOption")
                    .getMethod("of", resolverType).invoke(null, resolver));
            classFile = cf.getMethod("of", options.getClass()).invoke(null, options);
            parse = cf.getMethod("parse", byte[].class);
            Class<?> wrapperType = Class.forName("jdk.internal.classfile.impl.verifier.VerificationWrapper");
            Class<?> impl = Class.forName("jdk.internal.classfile.impl.verifier.VerifierImpl");
            wrapper = wrapperType.getConstructor(model);
            verifier = impl.getDeclaredConstructor(wrapperType, resolverType, Consumer.class);
            verifier.setAccessible(true);
            verifyClass = impl.getDeclaredMethod("verify_class");
            verifyClass.setAccessible(true);
        }

        String superName(byte[] bytes) throws ReflectiveOperationException {
            Optional<?> entry = (Optional<?>) superclass.invoke(parse.invoke(classFile, bytes));
            return entry.isPresent() ? (String) asInternalName.invoke(entry.get()) : null;
        }

        /** Type checking alone, whatever the class's name. */
        List<?> typeCheck(byte[] bytes) throws ReflectiveOperationException {
            Object model = parse.invoke(classFile, bytes);
            Consumer<String> quiet = s -> {};
            return (List<?>) verifyClass.invoke(verifier.newInstance(wrapper.newInstance(model), resolver, quiet));
        }

        /** What ClassFile.verify finds (nothing past format checks for the exempt names). */
        List<?> verifyPublic(byte[] bytes) throws ReflectiveOperationException {
            return (List<?>) verifyFormat.invoke(classFile, bytes);
        }

        /** ClassFile.verify's errors, then type checking whatever the name. */
        List<?> verify(byte[] bytes) throws ReflectiveOperationException {
            List<Object> errors = new ArrayList<>(verifyPublic(bytes));
            errors.addAll(typeCheck(bytes));
            return errors;
        }
    }

    private static List<String> messages(List<?> errors) {
        List<String> out = new ArrayList<>();
        for (Object e : errors) {
            out.add(oneLine(e));
        }
        return out;
    }

    private static void diff(Path originalDump, Path rewrittenDump) throws Exception {
        Map<String, byte[]> originals = new HashMap<>();
        readDump(originalDump, originals, new HashMap<>());
        Map<String, byte[]> rewritten = new TreeMap<>();
        readDump(rewrittenDump, rewritten, new HashMap<>());
        Verifier verifier = new Verifier(originals, true);
        int originalsFailing = 0;
        int introduced = 0;
        for (Map.Entry<String, byte[]> e : rewritten.entrySet()) {
            List<String> before = blanked(verifier.verifyPublic(originals.get(e.getKey())));
            List<String> after = blanked(verifier.verifyPublic(e.getValue()));
            if (!before.isEmpty()) {
                originalsFailing++;
            }
            if (!new TreeSet<>(before).containsAll(after) || after.size() > before.size()) {
                introduced++;
                System.out.println("DIFF NEW " + e.getKey() + " " + before + " => " + after);
            }
        }
        System.out.println("DIFF checked=" + rewritten.size() + " originals-failing=" + originalsFailing
                + " new=" + introduced);
    }

    /** Error messages with their numbers (offsets, which move) blanked. */
    private static List<String> blanked(List<?> errors) {
        List<String> out = new ArrayList<>();
        for (String m : messages(errors)) {
            out.add(m.replaceAll("[0-9]+", "N"));
        }
        return out;
    }

    private static void exempt(Path dump, Path patch) throws Exception {
        Map<String, byte[]> image = new HashMap<>();
        Map<String, String> modules = new HashMap<>();
        readDump(dump, image, modules);
        Verifier verifier = new Verifier(image, false);
        TreeSet<String> exempt = new TreeSet<>();
        exempt.add("java/lang/Object");
        exempt.add("java/lang/Class");
        exempt.add("java/lang/String");
        exempt.add("java/lang/Throwable");
        Map<String, String> supers = new HashMap<>();
        for (Map.Entry<String, byte[]> e : image.entrySet()) {
            supers.put(e.getKey(), verifier.superName(e.getValue()));
        }
        for (String name : image.keySet()) {
            for (String s = name; s != null; s = supers.get(s)) {
                if (s.equals("jdk/internal/reflect/MagicAccessorImpl")) {
                    exempt.add(name);
                    break;
                }
            }
        }
        int checked = 0;
        int failed = 0;
        int originalsFailed = 0;
        for (String name : exempt) {
            if (!image.containsKey(name)) {
                continue;
            }
            List<String> originalErrors = messages(verifier.verify(image.get(name)));
            if (!originalErrors.isEmpty()) {
                originalsFailed++;
                System.out.println("EXEMPT ORIGINAL FAILS " + name + " " + originalErrors);
            }
            Path rewritten = patch.resolve(modules.get(name)).resolve(name + ".class");
            if (!Files.exists(rewritten)) {
                continue;
            }
            checked++;
            // The port of the verifier fails a few originals (it cannot resolve
            // some classes); the rewritten class must fail no differently.
            List<String> errors = messages(verifier.verify(Files.readAllBytes(rewritten)));
            if (!errors.equals(originalErrors)) {
                failed++;
                System.out.println("EXEMPT FAIL " + name + " " + errors);
            }
        }
        // Broken code under an exempt name: type checking must run regardless.
        int canaryErrors = verifier.typeCheck(brokenClass("java/lang/Object")).size();
        System.out.println("EXEMPT checked=" + checked + " failed=" + failed + " originals-failed=" + originalsFailed
                + " canary-errors=" + canaryErrors);
    }
}
