import java.util.ArrayList;

/**
 * Every kind of clone() a program makes, N times each in one hot loop (the
 * JIT compiles it, and C2 copies objects for Object.clone without entering
 * the VM), for heap=sites' exact counts at each copy's site:
 *
 *   CloneKinds$Plain      Plain.copy's super.clone()                      N
 *   CloneKinds$Derived    Base.clone's super.clone(), through Derived's
 *                         override that calls it (one copy per call)      N
 *   CloneKinds$Base       Base.clone's super.clone()                      N
 *   int[]                 main's ints.clone(), 48 bytes each              N (+ the original)
 *   CloneKinds$Suit[]     Suit.values(), its $VALUES.clone()              N (+ $VALUES)
 *   java.util.ArrayList   ArrayList.clone's super.clone() (a JDK class
 *                         loaded before VM init)                          N
 *
 * Prints a checksum that reads every copy, so none is optimised away.
 */
public class CloneKinds {
    enum Suit { CLUBS, DIAMONDS, HEARTS, SPADES }

    static final class Plain implements Cloneable {
        int value;

        Plain copy() {
            try {
                return (Plain) super.clone();
            } catch (CloneNotSupportedException e) {
                throw new AssertionError(e);
            }
        }
    }

    static class Base implements Cloneable {
        int value;

        @Override
        public Base clone() {
            try {
                return (Base) super.clone();
            } catch (CloneNotSupportedException e) {
                throw new AssertionError(e);
            }
        }
    }

    static final class Derived extends Base {
        int extra;

        @Override
        public Derived clone() {
            Derived copy = (Derived) super.clone();
            copy.extra = extra + 1;
            return copy;
        }
    }

    static Object sink;

    public static void main(String[] args) {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 200_000;
        Plain plain = new Plain();
        Base base = new Base();
        Derived derived = new Derived();
        int[] ints = new int[8];
        ArrayList<String> list = new ArrayList<>();
        list.add("one");
        long checksum = 0;
        for (int i = 0; i < n; i++) {
            Plain p = plain.copy();
            p.value = i;
            checksum += p.value;
            Base b = base.clone();
            checksum += b.value;
            Derived d = derived.clone();
            checksum += d.extra;
            int[] copy = ints.clone();
            copy[0] = i;
            checksum += copy[0];
            checksum += Suit.values().length;
            @SuppressWarnings("unchecked")
            ArrayList<String> listCopy = (ArrayList<String>) list.clone();
            checksum += listCopy.size();
            sink = listCopy;
        }
        System.out.println("cloned " + n + " checksum " + checksum);
    }
}
