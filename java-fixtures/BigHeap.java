/**
 * Keeps args[0] MB (default 64) of byte arrays alive, prints "held", then
 * ends normally: a heap dump of it is at least that large.
 */
public class BigHeap {
    static byte[][] held;

    public static void main(String[] args) {
        int mb = args.length > 0 ? Integer.parseInt(args[0]) : 64;
        held = new byte[mb][];
        for (int i = 0; i < mb; i++) {
            held[i] = new byte[1 << 20];
            held[i][i] = (byte) i;
        }
        System.out.println("held");
    }
}
