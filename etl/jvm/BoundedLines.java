package etl.jvm;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Base64;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.io.compress.CompressionCodec;
import org.apache.hadoop.io.compress.CompressionCodecFactory;
import org.apache.hadoop.io.compress.SplittableCompressionCodec;
import org.apache.hadoop.util.LineReader;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.execution.datasources.HadoopFileLinesReader;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.util.TaskCompletionListener;

/**
 * A file split's lines with a maximum size, each checked before anyone parses it (the jsonl and text file sources).
 *
 * <p>Spark's line reader (Hadoop's LineRecordReader) holds a whole line in memory: one 200 MB line took the driver's
 * heap. Here Hadoop's LineReader stores at most {@code max + 1} bytes of a line and reads past the rest, so a longer
 * line costs {@code max} bytes of memory and becomes a rejected line: its first {@link #KEPT} bytes and a reason with
 * its size. The split rules are LineRecordReader's (a split after the first skips its first partial line, reads the
 * line that starts at its end; a UTF-8 byte order mark at the start of a file is dropped; non-splittable compressed
 * files are read whole). A custom line separator or a splittable codec (bzip2) is Spark's reader with the same
 * checks after the line is read (no memory bound).
 *
 * <p>A line that is not valid UTF-8 (an invalid or overlong sequence, a surrogate's bytes, a code point above
 * U+10FFFF) is rejected with its exact bytes in base64: Spark would keep the bytes and a Java String would turn them
 * into U+FFFD somewhere later, a silent change. A jsonl line whose JSON escapes make a lone surrogate ({@code
 * \ud800} without its pair) is rejected too: Jackson would make a Java String of it, which becomes {@code ?} in UTF-8.
 */
final class BoundedLines implements Closeable {
    static final int KEPT = 1024;  // bytes of an oversized line kept for its dead letter
    private static final long HIGH_BITS = 0x8080808080808080L;
    private static final long LOW_BITS = 0x7F7F7F7F7F7F7F7FL;
    private static final long BACKSLASHES = 0x5C5C5C5C5C5C5C5CL;

    private final long max;  // bytes a line may have (0: Spark's reader, nothing checked)
    private final boolean json;  // check JSON escapes for lone surrogates
    private final InputStream stream;  // null: Spark's reader (`spark`)
    private final LineReader reader;
    private final HadoopFileLinesReader spark;
    private final boolean whole;  // a compressed file: read to its end
    private final long end;
    private long pos;
    private boolean first;
    private Text line = new Text();
    private final Text payload = new Text();
    private String reason;

    /** The lines of `file` for a Spark task: closed when the task completes (an I/O error unchecked). */
    static BoundedLines forTask(PartitionedFile file, scala.Option<byte[]> separator, Configuration conf, long max,
                                boolean json) {
        BoundedLines lines;
        try {
            lines = new BoundedLines(file, separator, conf, max, json);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        TaskContext tc = TaskContext.get();
        if (tc != null) tc.addTaskCompletionListener((TaskCompletionListener) ctx -> {
            try {
                lines.close();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
        return lines;
    }

    BoundedLines(PartitionedFile file, scala.Option<byte[]> separator, Configuration conf, long max, boolean json)
            throws IOException {
        this.max = max;
        this.json = json;
        Path path = file.toPath();
        CompressionCodec codec = new CompressionCodecFactory(conf).getCodec(path);
        if (max <= 0 || separator.isDefined() || codec instanceof SplittableCompressionCodec || max >= Integer.MAX_VALUE) {
            stream = null;
            reader = null;
            spark = new HadoopFileLinesReader(file, separator, conf);
            whole = false;
            end = 0;
            return;
        }
        spark = null;
        FSDataInputStream in = path.getFileSystem(conf).open(path);
        long start = file.start();
        end = start + file.length();
        whole = codec != null;
        try {
            if (whole) {
                stream = codec.createInputStream(in);
            } else {
                in.seek(start);
                stream = in;
            }
            reader = new LineReader(stream, conf);
            if (start != 0 && !whole) {  // the line that started before this split is the previous split's
                start += reader.readLine(new Text(), 0, (int) Math.min(Integer.MAX_VALUE, end - start));
            }
        } catch (IOException | RuntimeException e) {
            in.close();
            throw e;
        }
        pos = start;
        first = pos == 0;
    }

    /** The reader option etlMaxRecordBytes (0: none, nothing checked). */
    static long maxOption(scala.collection.immutable.Map<String, String> options) {
        scala.Option<String> v = options.get("etlMaxRecordBytes");
        return v.isDefined() ? Long.parseLong(v.get()) : 0;
    }

    /** The index of the column the reader option etlRejectColumn names in `schema`, if any. */
    static scala.Option<Object> rejectColumn(scala.collection.immutable.Map<String, String> options,
                                             org.apache.spark.sql.types.StructType schema) {
        scala.Option<String> v = options.get("etlRejectColumn");
        return v.isDefined() ? schema.getFieldIndex(v.get()) : scala.Option.empty();
    }

    /** The next line (false: none left); then {@link #line()} and {@link #reason()}. */
    boolean next() throws IOException {
        reason = null;
        if (spark != null) {
            if (!spark.hasNext()) return false;
            line = spark.next();
            if (max <= 0) return true;
            if (line.getLength() > max) {
                reject(line.getLength(), "");
                return true;
            }
        } else {
            if (!whole && pos > end) return false;
            int n = reader.readLine(line, (int) max + 1, Integer.MAX_VALUE);
            if (n == 0) return false;
            pos += n;
            if (first) {
                first = false;
                byte[] b = line.getBytes();
                if (line.getLength() >= 3 && b[0] == (byte) 0xEF && b[1] == (byte) 0xBB && b[2] == (byte) 0xBF) {
                    line.set(b, 3, line.getLength() - 3);  // Hadoop drops a UTF-8 byte order mark
                    n -= 3;
                }
            }
            if (line.getLength() > max) {
                reject(n, " (line end included)");
                return true;
            }
        }
        check();
        return true;
    }

    /** The line, or a rejected line's payload. */
    Text line() {
        return reason == null ? line : payload;
    }

    /** Why the line is rejected (null: it is not). */
    String reason() {
        return reason;
    }

    private void reject(long size, String what) {
        int k = utf8Prefix(line.getBytes(), Math.min(KEPT, line.getLength()));
        payload.set(line.getBytes(), 0, k);
        reason = "record of " + size + " bytes" + what + " is over the maximum record size of " + max
            + " bytes (ETL_MAX_RECORD_MB); payload: its first " + k + " bytes";
    }

    private void check() {
        byte[] b = line.getBytes();
        int n = line.getLength();
        int bad = invalidUtf8(b, n, json);
        if (bad == -1) return;
        if (bad >= 0) {
            payload.set(Base64.getEncoder().encode(java.util.Arrays.copyOf(b, n)));
            reason = String.format("line is not valid UTF-8 (byte 0x%02X at offset %d); payload: the line's %d bytes "
                + "in base64", b[bad] & 0xFF, bad, n);
            return;
        }
        int at = -bad - 2;
        payload.set(b, 0, n);
        reason = "json escape " + new String(b, at, 6, StandardCharsets.US_ASCII) + " at offset " + at
            + " is a lone surrogate, not a Unicode character";
    }

    /**
     * -1: valid UTF-8 (and, when `json`, no escape of a lone surrogate); an offset >= 0: the first byte of an invalid
     * sequence; -2 - offset: the offset of an escape {@code \\uD800}..{@code \\uDFFF} without its pair.
     */
    static int invalidUtf8(byte[] b, int n, boolean json) {
        if (n >= 8 && plainAscii(b, n, json)) return -1;
        int i = 0;
        while (i < n) {
            if (i + 8 <= n) {
                long w = Platform.getLong(b, Platform.BYTE_ARRAY_OFFSET + i);
                if (((w | (json ? backslashes(w) : 0)) & HIGH_BITS) == 0) {
                    i += 8;
                    continue;
                }
            }
            int c = b[i] & 0xFF;
            if (c < 0x80) {
                if (c == '\\' && json) {
                    int s = escape(b, i, n);
                    if (s < -1) return s;
                    i += s;
                } else {
                    i++;
                }
                continue;
            }
            int len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
            if (len == 0 || i + len > n) return i;
            int c1 = b[i + 1] & 0xFF;
            int lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;  // no overlong forms
            int hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;  // no surrogates, nothing above U+10FFFF
            if (c1 < lo || c1 > hi) return i;
            for (int k = 2; k < len; k++) {
                if ((b[i + k] & 0xC0) != 0x80) return i;
            }
            i += len;
        }
        return -1;
    }

    /**
     * Whether b[0, n) (n >= 8) is all ASCII, and when `json` holds no backslash: then it is valid UTF-8 and holds no
     * escape. Most lines are; one pass without a branch, 16 bytes a round into two pairs of accumulators (the last
     * bytes as a word ending at n, overlapping the ones before), decides it: 9.5 against 16 ns a line of
     * bench/json_read.py's data with the branch per word it replaces.
     */
    private static boolean plainAscii(byte[] b, int n, boolean json) {
        final long base = Platform.BYTE_ARRAY_OFFSET;
        long high = 0;  // the OR of the words: a byte >= 0x80 sets a high bit
        long high2 = 0;
        long slash = 0;  // backslashes' high bits, when the words are ASCII
        long slash2 = 0;
        int i = 0;
        for (; i + 16 <= n; i += 16) {
            long w = Platform.getLong(b, base + i);
            long v = Platform.getLong(b, base + i + 8);
            high |= w;
            high2 |= v;
            slash |= backslashes(w);
            slash2 |= backslashes(v);
        }
        if (i + 8 <= n) {
            long w = Platform.getLong(b, base + i);
            high |= w;
            slash |= backslashes(w);
        }
        long w = Platform.getLong(b, base + n - 8);
        high |= high2 | w;
        slash |= slash2 | backslashes(w);
        return ((high | (json ? slash : 0)) & HIGH_BITS) == 0;
    }

    /** Bytes to skip past the backslash at `i`, or -2 - i when it starts an escape of a lone surrogate. */
    private static int escape(byte[] b, int i, int n) {
        if (i + 1 >= n) return 1;
        if (b[i + 1] != 'u') return b[i + 1] < 0 ? 1 : 2;  // a non-ASCII byte after it: UTF-8's check reads it
        int u = hex4(b, i + 2, n);
        if (u < 0xD800 || u > 0xDFFF) return 2;
        if (u <= 0xDBFF && i + 7 < n && b[i + 6] == '\\' && b[i + 7] == 'u') {
            int low = hex4(b, i + 8, n);
            if (low >= 0xDC00 && low <= 0xDFFF) return 12;
        }
        return -2 - i;
    }

    private static int hex4(byte[] b, int at, int n) {
        if (at + 4 > n) return -1;
        int v = 0;
        for (int k = 0; k < 4; k++) {
            int d = Character.digit(b[at + k], 16);
            if (d < 0) return -1;
            v = v * 16 + d;
        }
        return v;
    }

    /** A word whose high bit is set in each byte of an ASCII word `w` that is a backslash (0x5C). */
    private static long backslashes(long w) {
        return ~((w ^ BACKSLASHES) + LOW_BITS);  // a byte below 0x80 other than 0x5C: (b ^ 0x5C) + 0x7F >= 0x80
    }

    /** The length of the longest prefix of b[0, n) that does not end inside a UTF-8 sequence. */
    private static int utf8Prefix(byte[] b, int n) {
        int k = n;
        while (k > 0 && k > n - 4 && (b[k - 1] & 0xC0) == 0x80) k--;  // continuation bytes at the end
        if (k > 0 && (b[k - 1] & 0xC0) == 0xC0) {  // a lead byte: whole when its continuation bytes are all there
            int c = b[k - 1] & 0xFF;
            int len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
            return k - 1 + len <= n ? k - 1 + len : k - 1;
        }
        return n;
    }

    @Override
    public void close() throws IOException {
        if (spark != null) spark.close();
        if (stream != null) stream.close();
    }
}
