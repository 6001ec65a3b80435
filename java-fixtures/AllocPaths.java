import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Array;
import java.lang.reflect.Constructor;
import java.util.Arrays;
import java.util.function.Supplier;

/**
 * Every way a Java program makes an object, each in a hot loop long enough
 * for the JIT to compile it, each making a class of its own so that its
 * count can be told exactly: N = 200,000 per path (argument: another N).
 *
 *   AllocPaths$ByNew         new, in a method compiled by the JIT
 *   AllocPaths$Cloned        Object.clone()
 *   AllocPaths$Copied[]      Arrays.copyOf of an object array (N copies, plus the one original)
 *   AllocPaths$ByArray[]     Array.newInstance
 *   AllocPaths$ByRef         a constructor reference (Supplier ByRef::new: a hidden class's new)
 *   AllocPaths$ByReflection  Constructor.newInstance
 *   AllocPaths$ByHandle      MethodHandle of a constructor, invokeExact
 *   AllocPaths$Cell[][]      new Cell[2][3] (multianewarray): N outer arrays
 *   AllocPaths$Cell[]        ... and 2N inner ones
 *   AllocPaths$Thrown        made in a method then left by an exception, caught by its caller
 *   AllocPaths$Point         made and dropped within one method (escape analysis may
 *                            remove the allocation from compiled code; the bytecode made it)
 *   AllocPaths$$Lambda...    a capturing lambda, N objects of its hidden class (made by
 *                            Unsafe.allocateInstance up to JDK 17, by a `new` in the class later)
 *
 * Nothing is kept but the last object of each path; prints "made <N>" and a checksum.
 *
 * With the arguments "builders <k>" it instead makes k Strings with
 * StringBuilder.toString() (a class loaded before VM init) and prints "built <k>".
 */
public class AllocPaths {
    static final class ByNew { int v; }
    static final class Cloned implements Cloneable {
        int v;
        Cloned copy() throws CloneNotSupportedException { return (Cloned) clone(); }
    }
    static final class Copied { }
    static final class ByArray { }
    static final class ByRef { }
    static final class ByReflection { }
    static final class ByHandle { }
    static final class Cell { }
    static final class Thrown { int v; }
    static final class Point {
        final int x;
        final int y;
        Point(int x, int y) { this.x = x; this.y = y; }
    }

    static volatile Object sink;

    static ByNew byNew(int i) {
        ByNew b = new ByNew();
        b.v = i;
        return b;
    }

    static int thrower(int i) {
        Thrown t = new Thrown();
        t.v = i;
        if (t.v >= 0) {
            throw new IllegalStateException();
        }
        return t.v;
    }

    static int escape(int i) {
        Point p = new Point(i, i + 1);
        return p.x + p.y;
    }

    static java.util.function.IntSupplier capture(int i) {
        return () -> i + 1;
    }

    public static void main(String[] args) throws Throwable {
        if (args.length == 2 && args[0].equals("builders")) {
            int k = Integer.parseInt(args[1]);
            StringBuilder builder = new StringBuilder("built");
            for (int i = 0; i < k; i++) {
                sink = builder.toString();
            }
            System.out.println("built " + k);
            return;
        }
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 200_000;
        Cloned prototype = new Cloned();
        Copied[] original = new Copied[3];
        Supplier<ByRef> byRef = ByRef::new;
        Constructor<ByReflection> reflection = ByReflection.class.getDeclaredConstructor();
        MethodHandle handle =
            MethodHandles.lookup().findConstructor(ByHandle.class, MethodType.methodType(void.class));
        long checksum = 0;
        for (int i = 0; i < n; i++) {
            sink = byNew(i);
            sink = prototype.copy();
            sink = Arrays.copyOf(original, 5);
            sink = Array.newInstance(ByArray.class, 2);
            sink = byRef.get();
            sink = reflection.newInstance();
            sink = (ByHandle) handle.invokeExact();
            sink = new Cell[2][3];
            try {
                checksum += thrower(i);
            } catch (IllegalStateException e) {
                checksum += 1;
            }
            checksum += escape(i);
            checksum += capture(i).getAsInt();
        }
        System.out.println("made " + n + " checksum " + checksum);
    }
}
