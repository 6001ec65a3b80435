/**
 * Many distinct call paths for cpu=times: walk(13, bits) goes left() or
 * right() at each of 13 levels as the bits of `bits` say, so the 8192
 * walks take 8192 different paths of 40 frames to leaf(), which runs
 * exactly 8192 times. With depth=200 every path is a trace of its own.
 */
public class Paths {
    static final int LEVELS = 13;
    static long counter;

    static void walk(int level, int bits) {
        if (level == 0) {
            leaf();
        } else if ((bits >> (level - 1) & 1) == 0) {
            left(level - 1, bits);
        } else {
            right(level - 1, bits);
        }
    }

    static void left(int level, int bits) {
        walk(level, bits);
    }

    static void right(int level, int bits) {
        walk(level, bits);
    }

    static void leaf() {
        counter++;
    }

    public static void main(String[] args) {
        for (int bits = 0; bits < 1 << LEVELS; bits++) {
            walk(LEVELS, bits);
        }
        System.out.println("counter=" + counter);
    }
}
