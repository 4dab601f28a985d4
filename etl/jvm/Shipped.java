package etl.jvm;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

import org.apache.spark.SparkFiles;

/**
 * What etl's JVM code builds from a file the driver shipped (SparkContext.addFile, named by its content: a
 * prefilter's literals, a rule program), built once per JVM and found by the file's name. Only the last few are
 * kept: a long-running executor does not pile up every rule set that hot reloads replaced (a task still holding
 * an evicted one keeps using it).
 */
final class Shipped<V> {
    private final Map<String, V> built;
    private final Function<List<String>, V> build;
    private final String what;

    Shipped(int keep, String what, Function<List<String>, V> build) {
        this.what = what;
        this.build = build;
        this.built = new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, V> eldest) {
                return size() > keep;
            }
        };
    }

    /** The value built from the file's lines (ASCII): a path on this machine, else a name SparkFiles knows. */
    synchronized V get(String file) {
        V v = built.get(file);
        if (v == null) {
            Path path = Files.exists(Paths.get(file)) ? Paths.get(file) : Paths.get(SparkFiles.get(file));
            try {
                v = build.apply(Files.readAllLines(path, StandardCharsets.US_ASCII));
            } catch (IOException e) {
                throw new RuntimeException("etl: cannot read the " + what + " " + path, e);
            }
            built.put(file, v);
        }
        return v;
    }
}
