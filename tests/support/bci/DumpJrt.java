import java.io.BufferedOutputStream;
import java.io.DataOutputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.net.URI;
import java.util.Enumeration;
import java.util.HashSet;
import java.util.Set;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * Writes every class of the running JVM's module image (all of jrt:/) to the
 * file named by the first argument, sorted by path, one record per class:
 * writeUTF(module), writeUTF(internal class name), writeInt(length), bytes.
 * module-info classes are left out (they have no methods).
 * Used by tests/bci_jrt.rs; prints "classes N".
 *
 * "DumpJrt jars OUT JAR..." writes the classes of the jars instead (the jar's
 * file name in place of the module; the first class of a name wins), for
 * tests/bci_jars.rs.
 */
public class DumpJrt {
    public static void main(String[] args) throws IOException {
        if (args[0].equals("jars")) {
            dumpJars(args);
            return;
        }
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

    private static void dumpJars(String[] args) throws IOException {
        Set<String> seen = new HashSet<>();
        try (DataOutputStream out = new DataOutputStream(
                new BufferedOutputStream(new FileOutputStream(args[1]), 1 << 20))) {
            for (int i = 2; i < args.length; i++) {
                try (ZipFile jar = new ZipFile(args[i])) {
                    for (Enumeration<? extends ZipEntry> e = jar.entries(); e.hasMoreElements(); ) {
                        String entry = e.nextElement().getName();
                        // META-INF/versions/ copies and module-info are left out.
                        if (!entry.endsWith(".class") || entry.startsWith("META-INF/")
                                || entry.endsWith("module-info.class")) {
                            continue;
                        }
                        String name = entry.substring(0, entry.length() - ".class".length());
                        if (!seen.add(name)) {
                            continue;
                        }
                        byte[] bytes = jar.getInputStream(jar.getEntry(entry)).readAllBytes();
                        out.writeUTF(Paths.get(args[i]).getFileName().toString());
                        out.writeUTF(name);
                        out.writeInt(bytes.length);
                        out.write(bytes);
                    }
                }
            }
        }
        System.out.println("classes " + seen.size());
    }
}
