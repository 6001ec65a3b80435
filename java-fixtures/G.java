/**
 * A method whose cost sits deeper than HPROF's 4 frames: line() builds a
 * String of `width` characters (a StringBuilder of that capacity, then its
 * toString()), LINES times, called through main, run and six steps. Every
 * stack from an allocation in line() is 10 frames or more; shallow() makes
 * SHALLOW int[8] straight from main (2 frames).
 *
 * The argument picks the build: `baseline` (default) makes lines of 32
 * characters, `changed` of 48, as a change that makes one method allocate
 * more would. With compact strings each line is a StringBuilder and a
 * String (24 bytes each) and two byte[width] arrays (48 or 64 bytes).
 * Nothing is kept, and the program allocates far less than 8 MiB.
 */
public class G {
    static final int LINES = 10000;
    static final int SHALLOW = 5000;

    static volatile Object sink;

    static String line(int i, int width) {
        StringBuilder text = new StringBuilder(width);
        for (int k = 0; k < width; k++) {
            text.append((char) ('a' + (i + k) % 26));
        }
        return text.toString();
    }

    static void stepF(int width) {
        for (int i = 0; i < LINES; i++) {
            sink = line(i, width);
        }
    }

    static void stepE(int width) {
        stepF(width);
    }

    static void stepD(int width) {
        stepE(width);
    }

    static void stepC(int width) {
        stepD(width);
    }

    static void stepB(int width) {
        stepC(width);
    }

    static void stepA(int width) {
        stepB(width);
    }

    static void run(int width) {
        stepA(width);
    }

    static int[] shallow() {
        return new int[8];
    }

    public static void main(String[] args) {
        boolean changed = args.length > 0 && args[0].equals("changed");
        int width = changed ? 48 : 32;
        run(width);
        for (int i = 0; i < SHALLOW; i++) {
            sink = shallow();
        }
        System.out.println("lines=" + LINES + " width=" + width + " shallow=" + SHALLOW);
    }
}
