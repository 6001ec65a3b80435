import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.Serializable;

/**
 * Writes one {@code Deserialize$P[elements]} (every element a {@code P}, a
 * Serializable class with no fields) and reads it back {@code reads} times
 * with {@code ObjectInputStream.readObject()}. Each element read makes a
 * {@code P} (through the serialization constructor) and, in
 * {@code ObjectStreamClass.newInstance()}, the empty {@code Object[]} that
 * call passes to {@code Constructor.newInstance}: {@code elements * reads}
 * of each, plus the {@code elements} P written. By default 10,000 elements
 * read 20 times (about 35 MB, past heap=sites' exact start of 8 MiB, with
 * the reading code compiled by C2 long before). Prints {@code read=}.
 */
public class Deserialize {
    static final class P implements Serializable {
        private static final long serialVersionUID = 1L;
    }

    public static void main(String[] args) throws Exception {
        int elements = args.length > 0 ? Integer.parseInt(args[0]) : 10_000;
        int reads = args.length > 1 ? Integer.parseInt(args[1]) : 20;
        byte[] bytes = written(elements);
        long read = 0;
        for (int i = 0; i < reads; i++) {
            read += readBack(bytes);
        }
        System.out.println("read=" + read);
    }

    static byte[] written(int elements) throws IOException {
        P[] ps = new P[elements];
        for (int i = 0; i < ps.length; i++) {
            ps[i] = new P();
        }
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
            out.writeObject(ps);
        }
        return bytes.toByteArray();
    }

    static int readBack(byte[] bytes) throws IOException, ClassNotFoundException {
        try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes))) {
            return ((Object[]) in.readObject()).length;
        }
    }
}
