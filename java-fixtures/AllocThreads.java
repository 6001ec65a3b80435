/**
 * One allocation site reached three ways, for checking how traces are keyed:
 * threads "alpha" and "beta" each make 5000 Shared objects through the same
 * frames (fill -> make); the main thread makes 3000 Deep objects from
 * viaLeft() and 3000 from viaRight(), both through makeDeep(). All are kept.
 */
public class AllocThreads {
    static final class Shared {
        int v;
    }

    static final class Deep {
        int v;
    }

    static final int PER_THREAD = 5000;
    static final int PER_CALLER = 3000;
    static final Object[][] kept = new Object[4][];

    static Shared make() {
        return new Shared();
    }

    static void fill(Object[] into) {
        for (int i = 0; i < into.length; i++) {
            into[i] = make();
        }
    }

    static Deep makeDeep() {
        return new Deep();
    }

    static void viaLeft(Object[] into) {
        for (int i = 0; i < into.length; i++) {
            into[i] = makeDeep();
        }
    }

    static void viaRight(Object[] into) {
        for (int i = 0; i < into.length; i++) {
            into[i] = makeDeep();
        }
    }

    /** One Runnable class for both threads, so their frames are the same. */
    static final class Filler implements Runnable {
        private final Object[] into;

        Filler(Object[] into) {
            this.into = into;
        }

        @Override
        public void run() {
            fill(into);
        }
    }

    public static void main(String[] args) throws Exception {
        kept[0] = new Object[PER_THREAD];
        kept[1] = new Object[PER_THREAD];
        kept[2] = new Object[PER_CALLER];
        kept[3] = new Object[PER_CALLER];
        Thread alpha = new Thread(new Filler(kept[0]), "alpha");
        Thread beta = new Thread(new Filler(kept[1]), "beta");
        alpha.start();
        alpha.join();
        beta.start();
        beta.join();
        viaLeft(kept[2]);
        viaRight(kept[3]);
        System.out.println("kept " + (2 * PER_THREAD) + " Shared and " + (2 * PER_CALLER) + " Deep");
    }
}
