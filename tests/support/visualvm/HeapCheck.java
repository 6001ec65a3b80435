import java.io.File;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Objects;

import org.graalvm.visualvm.lib.jfluid.heap.FieldValue;
import org.graalvm.visualvm.lib.jfluid.heap.Heap;
import org.graalvm.visualvm.lib.jfluid.heap.HeapFactory;
import org.graalvm.visualvm.lib.jfluid.heap.Instance;
import org.graalvm.visualvm.lib.jfluid.heap.JavaClass;
import org.graalvm.visualvm.lib.jfluid.heap.ObjectArrayInstance;
import org.graalvm.visualvm.lib.jfluid.heap.ObjectFieldValue;
import org.graalvm.visualvm.lib.jfluid.heap.PrimitiveArrayInstance;

/**
 * Opens a binary heap dump of java-fixtures/HeapGraph.java with VisualVM's heap
 * library (org-graalvm-visualvm-lib-jfluid-heap.jar of the Debian package
 * visualvm) and checks what the fixture set: statics, the Node cycle and
 * its fields, object arrays (nulls included), primitive arrays, 1234 Leaf
 * instances. Then walks every instance and every class's statics and counts
 * references that name no object of the dump (dangling; must be 0).
 *
 * Usage: java -cp <jar>:<classes> HeapCheck FILE. Prints one line per check
 * ("ok ..." or "FAIL ..."), then "OK" (exit 0) or "FAILED n" (exit 1).
 */
public class HeapCheck {
    private static int failures;

    private static void check(String what, Object got, Object expected) {
        if (Objects.equals(got, expected)) {
            System.out.println("ok   " + what + " = " + got);
        } else {
            failures++;
            System.out.println("FAIL " + what + ": got " + got + ", expected " + expected);
        }
    }

    /** The Java text of a java.lang.String instance (JDK 9+ byte[] + coder, or JDK 8 char[]). */
    private static String text(Object value) {
        if (!(value instanceof Instance)) {
            return value == null ? null : "<not an instance: " + value + ">";
        }
        Instance s = (Instance) value;
        if (!s.getJavaClass().getName().equals("java.lang.String")) {
            return "<" + s.getJavaClass().getName() + ">";
        }
        Object array = s.getValueOfField("value");
        if (!(array instanceof PrimitiveArrayInstance)) {
            return "<String without value array>";
        }
        List<String> items = ((PrimitiveArrayInstance) array).getValues();
        StringBuilder out = new StringBuilder();
        if (((PrimitiveArrayInstance) array).getJavaClass().getName().equals("char[]")) {
            for (String c : items) {
                out.append(c);
            }
            return out.toString();
        }
        Object coder = s.getValueOfField("coder");
        boolean utf16 = coder != null && !coder.toString().equals("0");
        if (!utf16) {
            for (String b : items) {
                out.append((char) (Integer.parseInt(b) & 0xff));
            }
        } else {
            // UTF16 in the platform's (little-endian on x86) byte order.
            for (int k = 0; k + 1 < items.size(); k += 2) {
                int lo = Integer.parseInt(items.get(k)) & 0xff;
                int hi = Integer.parseInt(items.get(k + 1)) & 0xff;
                out.append((char) (lo | hi << 8));
            }
        }
        return out.toString();
    }

    /** True when both are the same object of the dump. */
    private static boolean same(Object a, Object b) {
        return a instanceof Instance && b instanceof Instance
                && ((Instance) a).getInstanceId() == ((Instance) b).getInstanceId();
    }

    private static String className(Object value) {
        return value instanceof Instance ? ((Instance) value).getJavaClass().getName() : String.valueOf(value);
    }

    /** HeapGraph.name, checked to be an object array of that class and length; null if not. */
    private static ObjectArrayInstance objectArray(JavaClass graph, String name, String type, int length) {
        Object value = graph.getValueOfStaticField(name);
        check("HeapGraph." + name + " class", className(value), type);
        if (!(value instanceof ObjectArrayInstance)) {
            return null;
        }
        ObjectArrayInstance array = (ObjectArrayInstance) value;
        check("HeapGraph." + name + " length", array.getLength(), length);
        return array.getLength() == length ? array : null;
    }

    private static void checkPrimitiveArray(JavaClass graph, String name, String type, List<String> expected) {
        Object value = graph.getValueOfStaticField(name);
        check("HeapGraph." + name + " class", className(value), type);
        if (value instanceof PrimitiveArrayInstance) {
            PrimitiveArrayInstance array = (PrimitiveArrayInstance) value;
            check("HeapGraph." + name + " length", array.getLength(), expected.size());
            check("HeapGraph." + name + " elements", array.getValues(), expected);
        }
    }

    private static List<String> strings(Object... values) {
        List<String> out = new ArrayList<>();
        for (Object v : values) {
            out.add(String.valueOf(v));
        }
        return out;
    }

    /**
     * The raw ids of an object array's elements. The public API only gives the
     * resolved Instance (null for both a null element and an id that names
     * nothing), so read the ids through the library's lazy list.
     */
    private static long[] elementIds(ObjectArrayInstance array) throws ReflectiveOperationException {
        List<Instance> values = array.getValues();
        Class<?> list = values.getClass();
        Field buffer = list.getDeclaredField("dumpBuffer");
        Field offset = list.getDeclaredField("offset");
        Field idSize = list.getDeclaredField("idSize");
        buffer.setAccessible(true);
        offset.setAccessible(true);
        idSize.setAccessible(true);
        Object dumpBuffer = buffer.get(values);
        Method getId = findMethod(dumpBuffer.getClass(), "getID", long.class);
        long start = offset.getLong(values);
        int size = idSize.getInt(values);
        long[] ids = new long[array.getLength()];
        for (int k = 0; k < ids.length; k++) {
            ids[k] = (Long) getId.invoke(dumpBuffer, start + (long) k * size);
        }
        return ids;
    }

    private static Method findMethod(Class<?> type, String name, Class<?>... params) throws NoSuchMethodException {
        for (Class<?> c = type; c != null; c = c.getSuperclass()) {
            try {
                Method m = c.getDeclaredMethod(name, params);
                m.setAccessible(true);
                return m;
            } catch (NoSuchMethodException e) {
                // try the superclass
            }
        }
        throw new NoSuchMethodException(type.getName() + "." + name);
    }

    private static long dangling;
    private static long references;

    private static void reference(Heap heap, String from, long id) {
        if (id == 0) {
            return;
        }
        references++;
        if (heap.getInstanceByID(id) == null && heap.getJavaClassByID(id) == null) {
            if (dangling < 10) {
                System.out.println("dangling: " + from + " -> 0x" + Long.toHexString(id));
            }
            dangling++;
        }
    }

    private static void fieldReferences(Heap heap, String from, List<FieldValue> values) {
        for (FieldValue v : values) {
            if (v instanceof ObjectFieldValue) {
                reference(heap, from + "." + v.getField().getName(), Long.parseLong(v.getValue()));
            }
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: HeapCheck FILE");
            System.exit(2);
        }
        Heap heap = HeapFactory.createHeap(new File(args[0]));

        JavaClass graph = heap.getJavaClassByName("HeapGraph");
        if (graph == null) {
            System.out.println("FAIL no class HeapGraph in the dump");
            System.out.println("FAILED 1");
            System.exit(1);
        }
        // Statics.
        check("HeapGraph.label", text(graph.getValueOfStaticField("label")), "heap-graph");
        check("HeapGraph.big", String.valueOf(graph.getValueOfStaticField("big")), "1234567890123");
        check("HeapGraph.count", String.valueOf(graph.getValueOfStaticField("count")), "42");
        check("HeapGraph.ratio", String.valueOf(graph.getValueOfStaticField("ratio")), "2.5");
        check("HeapGraph.flag", String.valueOf(graph.getValueOfStaticField("flag")), "true");
        check("HeapGraph.letter", String.valueOf(graph.getValueOfStaticField("letter")), "Z");
        check("HeapGraph.tiny", String.valueOf(graph.getValueOfStaticField("tiny")), "-7");
        check("HeapGraph.small", String.valueOf(graph.getValueOfStaticField("small")), "12345");
        check("HeapGraph.fraction", String.valueOf(graph.getValueOfStaticField("fraction")), "0.75");

        // The Node cycle from root.
        Object root = graph.getValueOfStaticField("root");
        check("HeapGraph.root class", className(root), "HeapGraph$Node");
        Instance[] chain = new Instance[3];
        Object node = root;
        for (int k = 0; k < 3 && node instanceof Instance; k++) {
            Instance n = (Instance) node;
            chain[k] = n;
            String p = "n" + k + ".";
            check(p + "baseTag", String.valueOf(n.getValueOfField("baseTag")), String.valueOf(7 * (k + 1)));
            check(p + "i", String.valueOf(n.getValueOfField("i")), String.valueOf(100 + k));
            check(p + "l", String.valueOf(n.getValueOfField("l")), String.valueOf(10_000_000_000L + k));
            check(p + "d", String.valueOf(n.getValueOfField("d")), String.valueOf(1.5 + k));
            check(p + "b", String.valueOf(n.getValueOfField("b")), String.valueOf(k % 2 == 0));
            check(p + "c", String.valueOf(n.getValueOfField("c")), String.valueOf((char) ('a' + k)));
            check(p + "by", String.valueOf(n.getValueOfField("by")), String.valueOf((byte) (-1 - k)));
            check(p + "sh", String.valueOf(n.getValueOfField("sh")), String.valueOf((short) (1000 + k)));
            check(p + "f", String.valueOf(n.getValueOfField("f")), String.valueOf(0.25f + k));
            check(p + "s", text(n.getValueOfField("s")), "node-" + k);
            Object payload = n.getValueOfField("payload");
            check(p + "payload class", className(payload), "int[]");
            if (payload instanceof PrimitiveArrayInstance) {
                check(p + "payload", ((PrimitiveArrayInstance) payload).getValues(), strings(k, k * k));
            }
            node = n.getValueOfField("next");
            check(p + "next class", className(node), "HeapGraph$Node");
        }
        check("n2.next is n0 (cycle)", same(node, chain[0]), true);

        // Object arrays with nulls.
        ObjectArrayInstance nodes = objectArray(graph, "nodes", "HeapGraph$Node[]", 4);
        if (nodes != null) {
            List<Instance> v = nodes.getValues();
            for (int k = 0; k < 3; k++) {
                check("HeapGraph.nodes[" + k + "] is n" + k, same(v.get(k), chain[k]), true);
            }
            check("HeapGraph.nodes[3] raw id", elementIds(nodes)[3], 0L);
        }
        ObjectArrayInstance slots = objectArray(graph, "slots", "java.lang.Object[]", 5);
        if (slots != null) {
            List<Instance> v = slots.getValues();
            check("HeapGraph.slots[0] is root", same(v.get(0), root), true);
            check("HeapGraph.slots[2]", text(v.get(2)), "slot-two");
            long[] ids = elementIds(slots);
            check("HeapGraph.slots null elements (raw ids 1, 3, 4)", strings(ids[1], ids[3], ids[4]), strings(0, 0, 0));
        }
        ObjectArrayInstance empty = objectArray(graph, "empty", "java.lang.Object[]", 3);
        if (empty != null) {
            long[] ids = elementIds(empty);
            check("HeapGraph.empty raw ids", strings(ids[0], ids[1], ids[2]), strings(0, 0, 0));
        }

        // Primitive arrays.
        checkPrimitiveArray(graph, "numbers", "int[]", strings(1, -2, 3, Integer.MAX_VALUE, Integer.MIN_VALUE));
        checkPrimitiveArray(graph, "longs", "long[]", strings(Long.MIN_VALUE, 0L, 1234567890123L));
        checkPrimitiveArray(graph, "doubles", "double[]", strings(0.5, -1.25, 1e300));
        checkPrimitiveArray(graph, "floats", "float[]", strings(1.5f, -2.75f));
        checkPrimitiveArray(graph, "booleans", "boolean[]", strings(true, false, true));
        checkPrimitiveArray(graph, "chars", "char[]", strings('h', 'p', 'r', 'o', 'f'));
        checkPrimitiveArray(graph, "bytes", "byte[]", strings((byte) -128, (byte) 0, (byte) 127));
        checkPrimitiveArray(graph, "shorts", "short[]", strings((short) -32768, (short) 7, (short) 32767));

        // Instance counts.
        JavaClass leaf = heap.getJavaClassByName("HeapGraph$Leaf");
        check("HeapGraph$Leaf instances", leaf == null ? null : leaf.getInstancesCount(), 1234);
        JavaClass nodeClass = heap.getJavaClassByName("HeapGraph$Node");
        check("HeapGraph$Node instances", nodeClass == null ? null : nodeClass.getInstancesCount(), 3);
        JavaClass base = heap.getJavaClassByName("HeapGraph$Base");
        check("HeapGraph$Base instances", base == null ? null : base.getInstancesCount(), 0);
        ObjectArrayInstance leaves = objectArray(graph, "leaves", "HeapGraph$Leaf[]", 1234);
        if (leaves != null) {
            List<Instance> v = leaves.getValues();
            boolean ids = true;
            for (int k = 0; k < v.size(); k++) {
                ids &= v.get(k) != null && String.valueOf(v.get(k).getValueOfField("id")).equals(String.valueOf(k));
            }
            check("HeapGraph.leaves[k].id == k", ids, true);
        }

        // Every reference names an object (instance, array or class) of the dump.
        long instances = 0;
        for (Iterator<Instance> it = heap.getAllInstancesIterator(); it.hasNext(); ) {
            Instance i = it.next();
            instances++;
            String from = i.getJavaClass().getName() + "@0x" + Long.toHexString(i.getInstanceId());
            if (i instanceof ObjectArrayInstance) {
                long[] ids = elementIds((ObjectArrayInstance) i);
                for (int k = 0; k < ids.length; k++) {
                    reference(heap, from + "[" + k + "]", ids[k]);
                }
            } else if (!(i instanceof PrimitiveArrayInstance)) {
                fieldReferences(heap, from, i.getFieldValues());
            }
        }
        int classes = 0;
        for (JavaClass c : heap.getAllClasses()) {
            classes++;
            fieldReferences(heap, c.getName() + " (static)", c.getStaticFieldValues());
        }
        System.out.println("walked " + instances + " instances, " + classes + " classes, " + references
                + " non-null references");
        check("dangling references", dangling, 0L);
        check("instances walked > 1234", instances > 1234, true);

        if (failures == 0) {
            System.out.println("OK");
        } else {
            System.out.println("FAILED " + failures);
            System.exit(1);
        }
    }
}
