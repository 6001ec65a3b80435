import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedList;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * Workload "heapdump": builds about 200 MB of live, mixed objects (an object graph with
 * cycles, strings, a hash map, a linked list, primitive and object arrays) from a fixed seed,
 * prints a checksum of what it built and the live heap size, then
 *   exit  - returns, so an agent with heap=dump (doe=y) dumps this heap at VM exit;
 *   wait  - prints READY and waits until standard input closes, so another process
 *           (jcmd GC.heap_dump, kill -3) can dump it.
 *
 * Usage: HeapHolder exit|wait [MEGABYTES]
 */
public final class HeapHolder {
    static final class Node {
        final int id;
        long weight;
        String label;
        Node[] edges;
        Object payload;

        Node(int id) {
            this.id = id;
        }
    }

    static volatile Object keep;

    public static void main(String[] args) throws IOException {
        boolean wait = args.length > 0 && args[0].equals("wait");
        int megabytes = args.length > 1 ? Integer.parseInt(args[1]) : 200;
        double scale = megabytes / 200.0;
        Random r = new Random(20240607L);
        long sum = 0;

        // 1. An object graph: nodes with 1-4 edges (cycles included) and small payloads.
        int nodes = (int) (600_000 * scale);
        Node[] graph = new Node[nodes];
        for (int i = 0; i < nodes; i++) {
            graph[i] = new Node(i);
            graph[i].weight = r.nextLong();
        }
        for (int i = 0; i < nodes; i++) {
            Node n = graph[i];
            n.edges = new Node[1 + r.nextInt(4)];
            for (int e = 0; e < n.edges.length; e++) {
                n.edges[e] = graph[r.nextInt(nodes)];
                sum += n.edges[e].id;
            }
            if (i % 3 == 0) {
                n.label = "node-" + i;
            }
            if (i % 7 == 0) {
                n.payload = new int[] {i, r.nextInt(), r.nextInt()};
            }
        }

        // 2. Strings of varied length, some sharing contents.
        int strings = (int) (400_000 * scale);
        String[] texts = new String[strings];
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < strings; i++) {
            sb.setLength(0);
            int len = 8 + r.nextInt(56);
            for (int c = 0; c < len; c++) {
                sb.append((char) ('a' + r.nextInt(26)));
            }
            texts[i] = sb.toString();
            sum += texts[i].hashCode();
        }

        // 3. A hash map from strings to boxed longs.
        int entries = (int) (250_000 * scale);
        Map<String, Long> map = new HashMap<>();
        for (int i = 0; i < entries; i++) {
            map.put(texts[i] + "#" + i, r.nextLong());
        }
        sum += map.size();

        // 4. A linked list of small arrays.
        List<Object> linked = new LinkedList<>();
        for (int i = 0; i < (int) (100_000 * scale); i++) {
            linked.add(i % 2 == 0 ? new long[4] : new double[] {r.nextDouble(), i});
        }

        // 5. Primitive arrays, large and small, about 60 MB in all.
        List<Object> arrays = new ArrayList<>();
        long arrayBytes = 0;
        while (arrayBytes < 60L * 1024 * 1024 * scale) {
            int kind = r.nextInt(4);
            int n = 16 + r.nextInt(r.nextInt(10) == 0 ? 400_000 : 4_000);
            Object a;
            if (kind == 0) {
                byte[] b = new byte[n];
                r.nextBytes(b);
                a = b;
                arrayBytes += n;
            } else if (kind == 1) {
                int[] v = new int[n];
                v[n - 1] = r.nextInt();
                a = v;
                arrayBytes += 4L * n;
            } else if (kind == 2) {
                long[] v = new long[n];
                v[0] = r.nextLong();
                a = v;
                arrayBytes += 8L * n;
            } else {
                char[] v = new char[n];
                v[n / 2] = 'x';
                a = v;
                arrayBytes += 2L * n;
            }
            arrays.add(a);
        }
        sum += arrays.size();

        keep = new Object[] {graph, texts, map, linked, arrays};

        System.gc();
        Runtime rt = Runtime.getRuntime();
        long live = rt.totalMemory() - rt.freeMemory();
        System.out.println("heapdump: " + nodes + " nodes, " + strings + " strings, " + map.size()
                + " map entries, " + arrays.size() + " arrays; heap in use after GC: "
                + (live >> 20) + " MB");
        System.out.println("checksum=" + Long.toHexString(sum));
        if (wait) {
            System.out.println("READY");
            System.out.flush();
            while (System.in.read() != -1) {
                // wait for standard input to close
            }
        }
        // `keep` still holds everything: an exit dump (doe=y) sees the whole heap.
    }
}
