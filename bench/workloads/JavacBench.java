import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.spi.ToolProvider;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * Workload "javac": the JDK's own compiler (javac, via ToolProvider) compiles the sources of
 * the jdk.compiler module (from Debian's openjdk-17-source, about 400 files) into a fresh
 * directory, then prints a SHA-256 over every produced class file (sorted by path).
 *
 * Usage: JavacBench SRC_DIR OUT_DIR   (SRC_DIR is the unpacked jdk.compiler/ folder)
 */
public final class JavacBench {
    public static void main(String[] args) throws Exception {
        Path src = Paths.get(args[0]);
        Path out = Paths.get(args[1]);
        deleteTree(out);
        Files.createDirectories(out);

        List<String> sources;
        try (Stream<Path> walk = Files.walk(src)) {
            sources = walk.map(Path::toString).filter(p -> p.endsWith(".java")).sorted()
                    .collect(Collectors.toList());
        }
        List<String> javacArgs = new ArrayList<>(List.of(
                "--patch-module", "jdk.compiler=" + src,
                "-d", out.toString(),
                "-nowarn", "-Xlint:none", "-XDignore.symbol.file", "-implicit:none"));
        javacArgs.addAll(sources);

        ToolProvider javac = ToolProvider.findFirst("javac")
                .orElseThrow(() -> new IllegalStateException("no javac in this runtime"));
        int rc = javac.run(System.err, System.err, javacArgs.toArray(new String[0]));
        if (rc != 0) {
            System.err.println("JavacBench: javac exited with " + rc);
            System.exit(rc);
        }

        List<Path> classes;
        try (Stream<Path> walk = Files.walk(out)) {
            classes = walk.filter(p -> p.toString().endsWith(".class"))
                    .sorted(Comparator.comparing(p -> out.relativize(p).toString()))
                    .collect(Collectors.toList());
        }
        MessageDigest sha = MessageDigest.getInstance("SHA-256");
        for (Path p : classes) {
            sha.update(out.relativize(p).toString().replace('\\', '/').getBytes("UTF-8"));
            sha.update((byte) 0);
            sha.update(Files.readAllBytes(p));
        }
        System.out.println("javac: " + sources.size() + " sources -> " + classes.size() + " class files");
        System.out.println("checksum=" + hex(sha.digest()));
    }

    private static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(dir)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> {
                try {
                    Files.delete(p);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
        }
    }

    private static String hex(byte[] bytes) {
        StringBuilder s = new StringBuilder();
        for (byte b : bytes) {
            s.append(String.format("%02x", b));
        }
        return s.toString();
    }
}
