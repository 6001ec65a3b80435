/**
 * Starts three named threads worker-1..worker-3, each summing a small range,
 * joins them, and prints the results in a fixed order.
 */
public class Threads {
    static final class Worker extends Thread {
        private final int index;
        long result;

        Worker(int index) {
            super("worker-" + index);
            this.index = index;
        }

        @Override
        public void run() {
            result = work(index);
        }
    }

    static long work(int index) {
        long sum = 0;
        for (int i = 0; i < 100_000 * index; i++) {
            sum += i % 7;
        }
        return sum;
    }

    public static void main(String[] args) throws InterruptedException {
        Worker[] workers = new Worker[3];
        for (int i = 0; i < workers.length; i++) {
            workers[i] = new Worker(i + 1);
            workers[i].start();
        }
        for (Worker w : workers) {
            w.join();
        }
        for (Worker w : workers) {
            System.out.println(w.getName() + " result=" + w.result);
        }
    }
}
