package etl.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.spark.paths.SparkPath;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** BoundedLines: the jsonl and text file readers' lines, capped and checked, with Hadoop's split rules. */
class BoundedLinesTest {
    @TempDir
    Path dir;

    private Path file(byte[] bytes) throws IOException {
        Path p = dir.resolve("in-" + System.nanoTime() + ".jsonl");
        Files.write(p, bytes);
        return p;
    }

    private static PartitionedFile split(Path p, long start, long length) throws IOException {
        return new PartitionedFile(InternalRow.empty(), SparkPath.fromPathString(p.toString()), start, length,
            new String[0], 0L, Files.size(p), scala.collection.immutable.Map$.MODULE$.empty());
    }

    /** Each line as "text" or "REJECTED reason | payload". */
    private static List<String> read(PartitionedFile f, long max, boolean json) throws IOException {
        List<String> out = new ArrayList<>();
        try (BoundedLines lines = new BoundedLines(f, scala.Option.empty(), new Configuration(), max, json)) {
            while (lines.next()) {
                String text = lines.line().toString();
                out.add(lines.reason() == null ? text : "REJECTED " + lines.reason() + " | " + text);
            }
        }
        return out;
    }

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void linesAndAByteOrderMarkAtTheStart() throws IOException {
        byte[] body = b("\uFEFF{\"a\": 1}\nplain text\r\n\nlast");
        Path p = file(body);
        assertEquals(List.of("{\"a\": 1}", "plain text", "", "last"), read(split(p, 0, body.length), 100, true));
    }

    @Test
    void aLineOverTheMaximumIsRejectedWithItsFirstBytes() throws IOException {
        byte[] body = b("short\n0123456789ABCDEFGHIJ\nnext\n");
        Path p = file(body);
        assertEquals(List.of("short",
            "REJECTED record of 21 bytes (line end included) is over the maximum record size of 10 bytes "
                + "(ETL_MAX_RECORD_MB); payload: its first 11 bytes | 0123456789A",
            "next"), read(split(p, 0, body.length), 10, false));
    }

    @Test
    void invalidUtf8IsRejectedWithItsBytesInBase64() throws IOException {
        byte[] body = {'o', 'k', (byte) 0xFF, '\n', (byte) 0xC3, (byte) 0xA9, '\n', (byte) 0xC0, (byte) 0xAF, '\n'};
        Path p = file(body);
        assertEquals(List.of(
            "REJECTED line is not valid UTF-8 (byte 0xFF at offset 2); payload: the line's 3 bytes in base64 | b2v/",
            "\u00e9",
            "REJECTED line is not valid UTF-8 (byte 0xC0 at offset 0); payload: the line's 2 bytes in base64 | wK8="),
            read(split(p, 0, body.length), 100, false));
    }

    @Test
    void aJsonEscapeOfALoneSurrogateIsRejectedInJsonOnly() throws IOException {
        byte[] body = b("{\"a\":\"\\ud800\"}\n{\"a\":\"\\ud83d\\ude00\"}\n");
        Path p = file(body);
        assertEquals(List.of(
            "REJECTED json escape \\ud800 at offset 6 is a lone surrogate, not a Unicode character | {\"a\":\"\\ud800\"}",
            "{\"a\":\"\\ud83d\\ude00\"}"), read(split(p, 0, body.length), 100, true));
        assertEquals(List.of("{\"a\":\"\\ud800\"}", "{\"a\":\"\\ud83d\\ude00\"}"), read(split(p, 0, body.length), 100, false));
    }

    @Test
    void aBadByteOrALoneSurrogateIsFoundAtEveryOffsetOfEveryLength() {
        // the fast path reads 16 bytes a round, then a word, then the word ending at the line's end (overlapping)
        for (int n = 1; n <= 40; n++) {
            byte[] ok = "a".repeat(n).getBytes(StandardCharsets.US_ASCII);
            assertEquals(-1, BoundedLines.invalidUtf8(ok, n, true), "ASCII, " + n + " bytes");
            for (int at = 0; at < n; at++) {
                byte[] bad = ok.clone();
                bad[at] = (byte) 0x80;
                assertEquals(at, BoundedLines.invalidUtf8(bad, n, true), "0x80 at " + at + " of " + n);
                if (at + 6 <= n) {
                    byte[] lone = ok.clone();
                    System.arraycopy("\\udc00".getBytes(StandardCharsets.US_ASCII), 0, lone, at, 6);
                    assertEquals(-2 - at, BoundedLines.invalidUtf8(lone, n, true), "\\udc00 at " + at + " of " + n);
                    assertEquals(-1, BoundedLines.invalidUtf8(lone, n, false), "not json: " + at + " of " + n);
                    byte[] pair = ok.clone();
                    System.arraycopy("\\u00e9".getBytes(StandardCharsets.US_ASCII), 0, pair, at, 6);
                    assertEquals(-1, BoundedLines.invalidUtf8(pair, n, true), "\\u00e9 at " + at + " of " + n);
                }
            }
        }
    }

    @Test
    void splitsReadEveryLineOnce() throws IOException {
        StringBuilder sb = new StringBuilder();
        List<String> want = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
            String line = "line-" + i + "-" + "x".repeat(i % 7);
            want.add(line);
            sb.append(line).append('\n');
        }
        byte[] body = b(sb.toString());
        Path p = file(body);
        for (int size : new int[] {1, 5, 9, 13, 64, body.length}) {
            List<String> got = new ArrayList<>();
            for (long start = 0; start < body.length; start += size) {
                got.addAll(read(split(p, start, Math.min(size, body.length - start)), 100, false));
            }
            assertEquals(want, got, "splits of " + size + " bytes");
        }
    }

    @Test
    void noMaximumIsSparksReaderWithNothingChecked() throws IOException {
        byte[] body = {'o', 'k', (byte) 0xFF, '\n'};
        Path p = file(body);
        try (BoundedLines lines = new BoundedLines(split(p, 0, body.length), scala.Option.empty(), new Configuration(), 0,
                                                   false)) {
            assertEquals(true, lines.next());
            assertNull(lines.reason());
            assertEquals(3, lines.line().getLength());
            assertFalse(lines.next());
        }
    }
}
