import java.io.File;

/**
 * Allocates in four phases, each waiting for a file before it starts, so
 * that a {@code net=} front end can switch allocation tracking and clear the
 * sites between them with the program standing still.
 *
 * <p>Phase 1: 100 {@code NetPhases$A}, then prints {@code PHASE 1} and waits
 * for the file {@code go1} in the working directory. Phase 2: 200
 * {@code NetPhases$B}, {@code PHASE 2}, waits for {@code go2}. Phase 3: 300
 * {@code NetPhases$C}, {@code PHASE 3}, waits for {@code go3}. Phase 4: 400
 * {@code NetPhases$D} and 50 more {@code NetPhases$C}, {@code PHASE 4}, and
 * the program ends. Every object is kept to the end.
 */
public class NetPhases {
    static final class A {}

    static final class B {}

    static final class C {}

    static final class D {}

    static final Object[] kept = new Object[1050];
    static int next;

    static void keep(Object o) {
        kept[next++] = o;
    }

    static void makeC(int n) {
        for (int i = 0; i < n; i++) {
            keep(new C());
        }
    }

    static void phaseDone(int phase) throws InterruptedException {
        System.out.println("PHASE " + phase);
        System.out.flush();
        if (phase == 4) {
            return;
        }
        File go = new File("go" + phase);
        while (!go.exists()) {
            Thread.sleep(10);
        }
    }

    public static void main(String[] args) throws Exception {
        for (int i = 0; i < 100; i++) {
            keep(new A());
        }
        phaseDone(1);
        for (int i = 0; i < 200; i++) {
            keep(new B());
        }
        phaseDone(2);
        makeC(300);
        phaseDone(3);
        for (int i = 0; i < 400; i++) {
            keep(new D());
        }
        makeC(50);
        phaseDone(4);
    }
}
