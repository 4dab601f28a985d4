package etl.jvm;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Dissect in generated code: the values of a dissect pattern's fields on a line, as Logstash's Dissector scans
 * them (logstash-plugins/logstash-filter-dissect, dissectValues: its quirks included), on the line's UTF-8 bytes.
 *
 * <p>{@link #values} returns one element per field of the pattern (skip fields too), a view of the line's
 * bytes, or null when the line does not match (an empty line never does). The reference is etl/dissect.py's
 * Dissection.values; etl/components/transforms/dissect/build.py sets the fields from these values.
 *
 * <p>A spec (the plan's binary literal; etl/components/transforms/dissect/build.py writes it): "EDS1", u16 count of
 * fields, u32 length + the text before the first field, then per field: u8 1 when the field before it has the
 * `->` suffix (repeats of the delimiter before this field are skipped), i32 length + the delimiter after it (-1:
 * the last field), all little endian, delimiters in UTF-8.
 *
 * <p>{@link #json} is the same scan for SQL scripts' DISSECT (Spark's reflect(): Java strings in and out): the values
 * as a JSON array of strings (etl/sql/dissect.py reads it with from_json), the spec in base64.
 */
public final class Dissect {
    private static final ConcurrentHashMap<ByteBuffer, Spec> SPECS = new ConcurrentHashMap<>();
    private static final PerTask<byte[], Spec> TASKS = new PerTask<>();  // the spec literal's object -> its Spec
    // java.math.BigDecimal(String)'s numbers in ASCII digits (etl/dissect.py: _NUMBER_RE)
    private static final Pattern NUMBER = Pattern.compile("[+-]?(?:[0-9]+\\.?[0-9]*|\\.[0-9]+)(?:[eE]([+-]?[0-9]+))?");
    private static final long MAX_EXPONENT = 999_999_999L;

    private Dissect() {
    }

    public static ArrayData values(UTF8String line, byte[] spec) {
        return TASKS.get(spec, Dissect::spec).values(line);
    }

    private static Spec spec(byte[] spec) {
        return SPECS.computeIfAbsent(ByteBuffer.wrap(spec), k -> new Spec(spec));
    }

    private static final ConcurrentHashMap<String, Spec> SQL_SPECS = new ConcurrentHashMap<>();

    /** The values of {@link #values} as a JSON array of strings (null: no match), for reflect() in Spark SQL. */
    public static String json(String line, String spec) {
        if (line == null) {
            return null;
        }
        ArrayData found = SQL_SPECS.computeIfAbsent(spec, k -> new Spec(Base64.getDecoder().decode(k)))
                .values(UTF8String.fromString(line));
        if (found == null) {
            return null;
        }
        StringBuilder out = new StringBuilder(line.length() + 8 * found.numElements());
        out.append('[');
        for (int k = 0; k < found.numElements(); k++) {
            if (k > 0) out.append(',');
            String v = found.getUTF8String(k).toString();
            out.append('"');
            for (int i = 0; i < v.length(); i++) {
                char c = v.charAt(i);
                if (c == '"' || c == '\\') {
                    out.append('\\').append(c);
                } else if (c < 0x20) {
                    out.append(String.format("\\u%04x", (int) c));
                } else {
                    out.append(c);
                }
            }
            out.append('"');
        }
        return out.append(']').toString();
    }

    /** convert_datatype int: Logstash's BigDecimal(text).toBigInteger() (truncated) as text, null when the text is
     *  not a number or the integer does not fit in 64 bits. */
    public static UTF8String integer(UTF8String text) {
        BigDecimal d = number(text);
        if (d == null || d.precision() - d.scale() > 20) {
            return null;
        }
        BigInteger n = d.toBigInteger();
        return n.bitLength() < 64 ? UTF8String.fromString(n.toString()) : null;
    }

    /** convert_datatype float: BigDecimal(text) as a double, as text (null: not a number, or not finite). */
    public static UTF8String decimal(UTF8String text) {
        BigDecimal d = number(text);
        if (d == null) {
            return null;
        }
        double x = d.doubleValue();
        return Double.isInfinite(x) ? null : UTF8String.fromString(Double.toString(x + 0.0));
    }

    private static BigDecimal number(UTF8String text) {
        String s = text.toString();
        Matcher m = NUMBER.matcher(s);
        if (!m.matches()) {
            return null;
        }
        String e = m.group(1);
        if (e != null && (e.length() > 12 || Math.abs(Long.parseLong(e)) > MAX_EXPONENT)) {
            return null;
        }
        try {
            return new BigDecimal(s);
        } catch (NumberFormatException | ArithmeticException ex) {  // a scale past an int
            return null;
        }
    }

    /** A parsed spec (shared by every task: it holds no state of a line). */
    static final class Spec {
        final byte[] lead;
        final byte[][] next;  // null: the last field
        final boolean[] greedy;  // the delimiter before field k is skipped repeatedly

        Spec(byte[] raw) {
            ByteBuffer b = ByteBuffer.wrap(raw).order(ByteOrder.LITTLE_ENDIAN);
            byte[] magic = new byte[4];
            b.get(magic);
            if (!new String(magic, StandardCharsets.US_ASCII).equals("EDS1")) {
                throw new IllegalArgumentException("etl: not a dissect spec");
            }
            int n = b.getShort() & 0xFFFF;
            lead = new byte[b.getInt()];
            b.get(lead);
            next = new byte[n][];
            greedy = new boolean[n];
            for (int k = 0; k < n; k++) {
                greedy[k] = b.get() != 0;
                int len = b.getInt();
                if (len >= 0) {
                    next[k] = new byte[len];
                    b.get(next[k]);
                }
            }
        }

        ArrayData values(UTF8String line) {
            Object base = line.getBaseObject();
            long off = line.getBaseOffset();
            int size = line.numBytes();
            if (size == 0) {
                return null;
            }
            int n = next.length;
            Object[] out = new Object[n];
            int left = 0;
            for (int k = 0; k < n; k++) {
                byte[] prev = k == 0 ? lead : next[k - 1];
                if (k > 0 && greedy[k]) {  // moveBeyondDelimiter, greedy
                    if (prev.length > 0) {
                        while (at(base, off, size, prev, left)) left += prev.length;
                    }
                } else if (left == 0 && lead.length > 0) {  // the text before the first field starts the line
                    if (!at(base, off, size, prev, 0)) {
                        return null;
                    }
                    left = prev.length;
                }
                int start = left;
                byte[] delim = next[k];
                if (delim == null) {  // the last field: the rest of the line
                    out[k] = UTF8String.fromAddress(base, off + start, size - start);
                    break;
                }
                int pos = delim.length == 0 ? -1 : indexOf(base, off, size, delim, left);
                if (pos == -1) {
                    return null;
                }
                if (pos > 0) {  // Logstash's moveNext: a delimiter at the line's first byte leaves `left` as it is
                    out[k] = UTF8String.fromAddress(base, off + start, pos - start);
                    left = pos + delim.length;
                } else {
                    out[k] = UTF8String.EMPTY_UTF8;
                }
            }
            return new GenericArrayData(out);
        }

        /** Does `needle` occur at byte `at` of the line? */
        private static boolean at(Object base, long off, int size, byte[] needle, int at) {
            if (at + needle.length > size) {
                return false;
            }
            for (int j = 0; j < needle.length; j++) {
                if (Platform.getByte(base, off + at + j) != needle[j]) {
                    return false;
                }
            }
            return true;
        }

        /** The first occurrence of `needle` (not empty) at or after `from`, or -1. */
        private static int indexOf(Object base, long off, int size, byte[] needle, int from) {
            byte first = needle[0];
            int max = size - needle.length;
            for (int i = Math.max(from, 0); i <= max; i++) {
                if (Platform.getByte(base, off + i) != first) {
                    continue;
                }
                int j = 1;
                while (j < needle.length && Platform.getByte(base, off + i + j) == needle[j]) j++;
                if (j == needle.length) {
                    return i;
                }
            }
            return -1;
        }
    }
}
