import java.io.BufferedOutputStream;
import java.io.DataOutputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.net.URI;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * Writes every class of the running JVM's module image (all of jrt:/) to the
 * file named by the first argument, sorted by path, one record per class:
 * writeUTF(module), writeUTF(internal class name), writeInt(length), bytes.
 * module-info classes are left out (they have no methods).
 * Used by tests/bci_jrt.rs; prints "classes N".
 */
public class DumpJrt {
    public static void main(String[] args) throws IOException {
        FileSystem jrt = FileSystems.getFileSystem(URI.create("jrt:/"));
        List<Path> files;
        try (Stream<Path> walk = Files.walk(jrt.getPath("/modules"))) {
            files = walk.filter(p -> p.toString().endsWith(".class"))
                    .filter(p -> !p.getFileName().toString().equals("module-info.class"))
                    .sorted()
                    .collect(Collectors.toList());
        }
        try (DataOutputStream out = new DataOutputStream(
                new BufferedOutputStream(new FileOutputStream(args[0]), 1 << 20))) {
            for (Path p : files) {
                // /modules/<module>/<package path>/<Name>.class
                String module = p.getName(1).toString();
                String file = p.subpath(2, p.getNameCount()).toString();
                byte[] bytes = Files.readAllBytes(p);
                out.writeUTF(module);
                out.writeUTF(file.substring(0, file.length() - ".class".length()));
                out.writeInt(bytes.length);
                out.write(bytes);
            }
        }
        System.out.println("classes " + files.size());
    }
}
