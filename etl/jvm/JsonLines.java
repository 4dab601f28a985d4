package etl.jvm;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.ZoneId;
import java.util.Arrays;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.json.JSONOptions;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.DateFormatter;
import org.apache.spark.sql.catalyst.util.DateFormatter$;
import org.apache.spark.sql.catalyst.util.LegacyDateFormats;
import org.apache.spark.sql.catalyst.util.TimestampFormatter;
import org.apache.spark.sql.catalyst.util.TimestampFormatter$;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * JSON lines written straight from Spark's internal rows: the text `to_json(struct(...))` gives, plus a newline.
 *
 * <p>Spark's to_json turns every string into a Java String, hands it to Jackson, which escapes it into a
 * character buffer, which is encoded to UTF-8 again. Here the UTF-8 bytes of a value are copied into one
 * reusable byte buffer, escaping as Jackson does (quote, backslash, and control characters: \b \t \n \f \r
 * short, the others as \\u00XX), and numbers, booleans, dates and timestamps are written as to_json writes them
 * (Double.toString, Float.toString, BigDecimal.toString; Spark's own date and timestamp formatters with
 * to_json's default patterns and the session time zone). Null fields of structs are left out, null array
 * elements are written as null, like to_json. A text value with a non-ASCII byte goes through a Java String
 * first, exactly like to_json (malformed UTF-8 becomes U+FFFD).
 *
 * <p>Types: string, boolean, the integer types, float, double, decimal, date, timestamp, and arrays and structs
 * of them. etl/compile/jsonlines.py renders anything else with to_json.
 */
public final class JsonLines {
    private static final byte[] HEX = "0123456789ABCDEF".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] ESCAPE = new byte[128];  // 0: as is, 'u': \\u00XX, else the short escape

    static {
        for (int c = 0; c < 32; c++) ESCAPE[c] = 'u';
        ESCAPE['"'] = '"';
        ESCAPE['\\'] = '\\';
        ESCAPE['\b'] = 'b';
        ESCAPE['\t'] = 't';
        ESCAPE['\f'] = 'f';
        ESCAPE['\n'] = 'n';
        ESCAPE['\r'] = 'r';
    }

    // one layout per schema and zone; per task (its own literals) and thread: the layout and an output buffer
    private static final java.util.concurrent.ConcurrentHashMap<String, Layout> LAYOUTS =
            new java.util.concurrent.ConcurrentHashMap<>();
    private static final PerTask<UTF8String, Task> TASKS = new PerTask<>();

    /** A task's layout and buffer. */
    static final class Task {
        final UTF8String zone;
        final Layout layout;
        final Out out = new Out();

        Task(UTF8String schema, UTF8String zone) {
            this.zone = zone;
            this.layout = LAYOUTS.computeIfAbsent(zone + "\0" + schema, k -> new Layout(schema, zone));
        }
    }

    private JsonLines() {
    }

    /**
     * The row as a JSON line (ending with a newline). `schema` is the struct's type as Spark's JSON (a literal of
     * the plan: the same object for every row of a task), `zone` the session time zone.
     */
    public static UTF8String render(InternalRow row, UTF8String schema, UTF8String zone) {
        Task t = TASKS.get(schema, s -> new Task(s, zone));
        if (t.zone != zone) t = new Task(schema, zone);  // one schema literal with another zone: not seen in plans
        Out o = t.out;
        o.n = 0;
        t.layout.root.write(o, row);
        o.put((byte) '\n');
        return UTF8String.fromBytes(Arrays.copyOf(o.b, o.n));
    }

    /** A growing byte buffer, one per thread. */
    static final class Out {
        byte[] b = new byte[1024];
        int n;

        void ensure(int more) {
            if (n + more > b.length) b = Arrays.copyOf(b, Math.max(b.length * 2, n + more));
        }

        void put(byte c) {
            ensure(1);
            b[n++] = c;
        }

        void ascii(String s) {
            int len = s.length();
            ensure(len);
            for (int i = 0; i < len; i++) b[n++] = (byte) s.charAt(i);
        }

        /** A JSON string of UTF-8 bytes. */
        void string(Object base, long off, int len) {
            ensure(len + 2);
            int start = n;
            b[n++] = '"';
            int i = 0;
            while (i < len) {
                for (; i + 8 <= len; i += 8) {  // 8 bytes at a time while none needs a look
                    long w = Platform.getLong(base, off + i);
                    if (special(w)) break;
                    Platform.putLong(b, Platform.BYTE_ARRAY_OFFSET + n, w);
                    n += 8;
                }
                for (int stop = Math.min(len, i + 8); i < stop; i++) {  // the word that needs a look, byte by byte
                    byte c = Platform.getByte(base, off + i);
                    if (c < 0) {  // non-ASCII: decode and encode like to_json (Java String, U+FFFD for malformed)
                        n = start;
                        byte[] raw = new byte[len];
                        Platform.copyMemory(base, off, raw, Platform.BYTE_ARRAY_OFFSET, len);
                        stringSlow(new String(raw, StandardCharsets.UTF_8));
                        return;
                    }
                    if (ESCAPE[c] != 0) {
                        escape(c, len - i);
                    } else {
                        b[n++] = c;
                    }
                }
            }
            put((byte) '"');
        }

        private static final long ONES = 0x0101010101010101L;
        private static final long HIGH = 0x8080808080808080L;

        /** A byte of w is non-ASCII, a control character, a quote or a backslash. */
        private static boolean special(long w) {
            long control = (w - 0x2020202020202020L) & ~w;  // a byte below 0x20
            long quote = w ^ 0x2222222222222222L;
            long slash = w ^ 0x5C5C5C5C5C5C5C5CL;
            return ((w | control | ((quote - ONES) & ~quote) | ((slash - ONES) & ~slash)) & HIGH) != 0;
        }

        /** Writes the escape of `c`, keeping room for the `rest` bytes still to come (and a closing quote). */
        private void escape(byte c, int rest) {
            ensure(6 + rest + 1);
            b[n++] = '\\';
            byte e = ESCAPE[c];
            if (e == 'u') {
                b[n++] = 'u';
                b[n++] = '0';
                b[n++] = '0';
                b[n++] = HEX[(c >> 4) & 0xF];
                b[n++] = HEX[c & 0xF];
            } else {
                b[n++] = e;
            }
        }

        private void stringSlow(String s) {
            byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
            ensure(utf8.length * 6 + 2);
            b[n++] = '"';
            for (byte c : utf8) {
                if (c >= 0 && ESCAPE[c] != 0) {
                    escape(c, 0);
                } else {
                    b[n++] = c;
                }
            }
            b[n++] = '"';
        }
    }

    /** How to write one value of a type. */
    interface Writer {
        /** Writes the value at `i` of a row or array (never null there: callers check). */
        void write(Out o, Object container, int i);
    }

    /** The writers of one schema (built once per schema and zone literal). */
    static final class Layout {
        final StructWriter root;
        private final TimestampFormatter timestamps;
        private final DateFormatter dates;

        Layout(UTF8String schema, UTF8String zone) {
            JSONOptions opts = new JSONOptions(scala.collection.immutable.Map$.MODULE$.empty(), zone.toString(), "");
            ZoneId zid = opts.zoneId();
            timestamps = TimestampFormatter$.MODULE$.apply(opts.timestampFormatInWrite(), zid, opts.locale(),
                    LegacyDateFormats.FAST_DATE_FORMAT(), false);
            dates = DateFormatter$.MODULE$.apply(opts.dateFormatInWrite(), opts.locale(),
                    LegacyDateFormats.FAST_DATE_FORMAT(), false);
            root = new StructWriter((StructType) DataType.fromJson(schema.toString()), this);
        }

        Writer of(DataType t) {
            if (t instanceof StringType) {
                return (o, c, i) -> {
                    UTF8String s = get(c, i).getUTF8String(i);
                    o.string(s.getBaseObject(), s.getBaseOffset(), s.numBytes());
                };
            }
            if (t instanceof BooleanType) return (o, c, i) -> o.ascii(get(c, i).getBoolean(i) ? "true" : "false");
            if (t instanceof ByteType) return (o, c, i) -> o.ascii(Byte.toString(get(c, i).getByte(i)));
            if (t instanceof ShortType) return (o, c, i) -> o.ascii(Short.toString(get(c, i).getShort(i)));
            if (t instanceof IntegerType) return (o, c, i) -> o.ascii(Integer.toString(get(c, i).getInt(i)));
            if (t instanceof LongType) return (o, c, i) -> o.ascii(Long.toString(get(c, i).getLong(i)));
            if (t instanceof DoubleType) {
                return (o, c, i) -> {
                    double d = get(c, i).getDouble(i);
                    if (Double.isFinite(d)) {
                        o.ascii(Double.toString(d));
                    } else {
                        o.ascii("\"" + d + "\"");  // Jackson quotes NaN and the infinities
                    }
                };
            }
            if (t instanceof FloatType) {
                return (o, c, i) -> {
                    float f = get(c, i).getFloat(i);
                    o.ascii(Float.isFinite(f) ? Float.toString(f) : "\"" + f + "\"");
                };
            }
            if (t instanceof DecimalType) {
                DecimalType d = (DecimalType) t;
                return (o, c, i) -> {
                    BigDecimal v = get(c, i).getDecimal(i, d.precision(), d.scale()).toJavaBigDecimal();
                    o.ascii(v.toString());
                };
            }
            if (t instanceof DateType) return (o, c, i) -> quoted(o, dates.format(get(c, i).getInt(i)));
            if (t instanceof TimestampType) return (o, c, i) -> quoted(o, timestamps.format(get(c, i).getLong(i)));
            if (t instanceof StructType) {
                StructWriter w = new StructWriter((StructType) t, this);
                int n = ((StructType) t).fields().length;
                return (o, c, i) -> w.write(o, get(c, i).getStruct(i, n));
            }
            if (t instanceof ArrayType) {
                Writer e = of(((ArrayType) t).elementType());
                return (o, c, i) -> {
                    ArrayData a = get(c, i).getArray(i);
                    o.put((byte) '[');
                    for (int k = 0; k < a.numElements(); k++) {
                        if (k > 0) o.put((byte) ',');
                        if (a.isNullAt(k)) {
                            o.ascii("null");
                        } else {
                            e.write(o, a, k);
                        }
                    }
                    o.put((byte) ']');
                };
            }
            throw new UnsupportedOperationException("etl: JSON lines do not write " + t.simpleString());
        }

        private static void quoted(Out o, String s) {
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            o.string(b, Platform.BYTE_ARRAY_OFFSET, b.length);
        }

        /** Rows and arrays share the typed getters (SpecializedGetters). */
        private static org.apache.spark.sql.catalyst.expressions.SpecializedGetters get(Object c, int i) {
            return (org.apache.spark.sql.catalyst.expressions.SpecializedGetters) c;
        }
    }

    /** An object: its non-null fields in order, each as "name":value. */
    static final class StructWriter {
        private final byte[][] names;  // "name": already escaped
        private final Writer[] fields;

        StructWriter(StructType t, Layout l) {
            StructField[] fs = t.fields();
            names = new byte[fs.length][];
            fields = new Writer[fs.length];
            Out o = new Out();
            for (int k = 0; k < fs.length; k++) {
                o.n = 0;
                byte[] name = fs[k].name().getBytes(StandardCharsets.UTF_8);
                o.string(name, Platform.BYTE_ARRAY_OFFSET, name.length);
                o.put((byte) ':');
                names[k] = Arrays.copyOf(o.b, o.n);
                fields[k] = l.of(fs[k].dataType());
            }
        }

        void write(Out o, InternalRow row) {
            o.put((byte) '{');
            boolean first = true;
            for (int k = 0; k < fields.length; k++) {
                if (row.isNullAt(k)) continue;
                if (!first) o.put((byte) ',');
                first = false;
                o.ensure(names[k].length);
                System.arraycopy(names[k], 0, o.b, o.n, names[k].length);
                o.n += names[k].length;
                fields[k].write(o, row, k);
            }
            o.put((byte) '}');
        }
    }
}
