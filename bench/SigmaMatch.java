import java.io.BufferedWriter;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * bench/sigma_match.py's harness: etl.jvm.RuleMatch.idsRow over events outside Spark, on one thread.
 *
 * <p>Arguments: the program file, the rows file (a line per event, its fields' values tab-separated, each as hex
 * of its UTF-8 bytes or ~ for null), the number of timed passes, the file to write each event's ids to (a line
 * per event, comma-separated). Prints the CPU microseconds per event of each pass, then `ids sha256 <hex>`.
 */
public final class SigmaMatch {
    public static void main(String[] a) throws Exception {
        UTF8String file = UTF8String.fromString(a[0]);
        List<String> lines = Files.readAllLines(Paths.get(a[1]), StandardCharsets.US_ASCII);
        int passes = Integer.parseInt(a[2]);
        HexFormat hex = HexFormat.of();
        InternalRow[] rows = new InternalRow[lines.size()];
        for (int i = 0; i < rows.length; i++) {
            String[] f = lines.get(i).split("\t", -1);
            Object[] v = new Object[f.length];
            for (int k = 0; k < f.length; k++) v[k] = f[k].equals("~") ? null : UTF8String.fromBytes(hex.parseHex(f[k]));
            rows[i] = new GenericInternalRow(v);
        }
        MessageDigest sha = MessageDigest.getInstance("SHA-256");
        try (BufferedWriter out = Files.newBufferedWriter(Paths.get(a[3]), StandardCharsets.UTF_8)) {
            for (InternalRow row : rows) {
                ArrayData ids = etl.jvm.RuleMatch.idsRow(row, file);
                StringBuilder s = new StringBuilder();
                for (int k = 0; k < ids.numElements(); k++) s.append(k == 0 ? "" : ",").append(ids.getUTF8String(k));
                s.append('\n');
                out.write(s.toString());
                sha.update(s.toString().getBytes(StandardCharsets.UTF_8));
            }
        }
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        double[] us = new double[passes];
        long sink = 0;
        for (int p = 0; p < passes; p++) {
            long t = mx.getCurrentThreadCpuTime();
            for (InternalRow row : rows) sink += etl.jvm.RuleMatch.idsRow(row, file).numElements();
            us[p] = (mx.getCurrentThreadCpuTime() - t) / 1e3 / rows.length;
            System.out.printf("pass %d: %.2f cpu-us/event%n", p + 1, us[p]);
        }
        Arrays.sort(us);
        System.out.printf("median %.2f cpu-us/event over %d events (%d matches per pass)%n", us[passes / 2],
                          rows.length, sink / passes);
        System.out.println("ids sha256 " + hex.formatHex(sha.digest()));
    }
}
