package etl.jvm;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Grok in generated code: the captures of an expanded grok pattern on a line, as an array of strings.
 *
 * <p>The result is what a search with java.util.regex gives for the pattern compiled with {@link #FLAGS} (the leftmost
 * match, its groups as the backtracking engine assigns them): three answers, told apart by the array alone
 * (etl/components/transforms/grok/build.py reads them so):
 * <ul>
 * <li>matched: one element per group, element k the text of group groups[k], null when that group did not take
 *     part (a pattern without captures that matches gives an empty array);</li>
 * <li>no match: null;</li>
 * <li>gave up: one element MORE than there are groups, all null, when the regex ran past its step budget on the
 *     line ({@link CountedText}: java.util.regex backtracks; the line goes to dead letters with that reason).</li>
 * </ul>
 * Callers read an empty capture like a missing one.
 *
 * <p>A spec (the plan's binary literal; etl/components/transforms/grok/build.py writes it): "EGS1", u32 length + the
 * regex (UTF-8), u16 count + that many u16 group numbers, u32 length + a matcher program of etl/grokvm (0:
 * none), all little endian. When there is a program and the line is ASCII, the program's walker answers first
 * (a line with a '\n' is among its fallback bytes: the program reads the regex without MULTILINE)
 * (GrokProgram: exact, or "not sure"); the regex answers otherwise.
 */
public final class Grok {
    /** Logstash's reading of grok (Ruby's Regexp::MULTILINE): '.' takes a newline, ^ and $ are line anchors, and
     *  only '\n' ends a line (etl/components/transforms/grok/build.py's spark-regexp engine spells them (?smd)). */
    static final int FLAGS = Pattern.DOTALL | Pattern.MULTILINE | Pattern.UNIX_LINES;
    private static final ConcurrentHashMap<ByteBuffer, Spec> SPECS = new ConcurrentHashMap<>();
    private static final PerTask<byte[], Task> TASKS = new PerTask<>();
    private static final java.util.concurrent.atomic.LongAdder REGEX_LINES = new java.util.concurrent.atomic.LongAdder();

    /** Lines of patterns with a program that the regex answered, since the JVM started (tests, diagnostics). */
    public static long regexLines() {
        return REGEX_LINES.sum();
    }

    private Grok() {
    }

    /** Are the n bytes at (base, off) all ASCII? (8 at a time) */
    static boolean ascii(Object base, long off, int n) {
        int i = 0;
        long any = 0;
        for (; i + 8 <= n; i += 8) any |= Platform.getLong(base, off + i);
        for (; i < n; i++) any |= Platform.getByte(base, off + i);
        return (any & 0x8080808080808080L) == 0;
    }

    public static ArrayData captures(UTF8String line, byte[] spec) {
        return TASKS.get(spec, Grok::task).captures(line);
    }

    private static Task task(byte[] spec) {
        return new Task(SPECS.computeIfAbsent(ByteBuffer.wrap(spec), k -> new Spec(spec)));
    }

    /** A parsed spec (shared by every task). */
    static final class Spec {
        final Pattern pattern;
        final int[] groups;
        final GrokProgram program;  // null: the regex does everything
        final GenericArrayData gaveUp;  // groups.length + 1 nulls: "ran past the step budget"

        Spec(byte[] raw) {
            ByteBuffer b = ByteBuffer.wrap(raw).order(ByteOrder.LITTLE_ENDIAN);
            byte[] magic = new byte[4];
            b.get(magic);
            if (!new String(magic, StandardCharsets.US_ASCII).equals("EGS1")) {
                throw new IllegalArgumentException("etl: not a grok spec");
            }
            byte[] rx = new byte[b.getInt()];
            b.get(rx);
            pattern = Pattern.compile(new String(rx, StandardCharsets.UTF_8), FLAGS);
            groups = new int[b.getShort() & 0xFFFF];
            for (int k = 0; k < groups.length; k++) groups[k] = b.getShort() & 0xFFFF;
            gaveUp = new GenericArrayData(new Object[groups.length + 1]);
            int plen = b.getInt();
            if (plen > 0) {
                byte[] prog = new byte[plen];
                b.get(prog);
                program = GrokProgram.read(prog);
            } else {
                program = null;
            }
        }
    }

    /** What one task (one thread) uses: the shared spec, its own matcher and spans. */
    static final class Task {
        final Spec spec;
        final Matcher matcher;
        final int[] spans;
        final CountedText text = new CountedText();
        private byte[] bytes = new byte[256];

        Task(Spec spec) {
            this.spec = spec;
            this.matcher = spec.pattern.matcher(text);
            this.spans = new int[2 * ((spec.program == null ? 0 : spec.program.groups) + 1)];
        }

        ArrayData captures(UTF8String line) {
            Object base = line.getBaseObject();
            long off = line.getBaseOffset();
            int n = line.numBytes();
            boolean ascii = ascii(base, off, n);
            int[] groups = spec.groups;
            if (ascii && spec.program != null && spec.program.run(base, off, n, spans)) {
                Object[] out = new Object[groups.length];
                for (int k = 0; k < groups.length; k++) {
                    int g = groups[k];
                    int a = spans[2 * g];
                    out[k] = a < 0 ? null : slice(base, off, a, spans[2 * g + 1]);
                }
                return new GenericArrayData(out);
            }
            if (spec.program != null) REGEX_LINES.increment();
            if (ascii) {  // one byte per character
                if (n > bytes.length) bytes = new byte[Math.max(n, 2 * bytes.length)];
                Platform.copyMemory(base, off, bytes, Platform.BYTE_ARRAY_OFFSET, n);
                text.set(bytes, n);
            } else {
                text.set(line.toString());
            }
            Matcher m = matcher;
            m.reset(text.budget());
            try {
                if (!m.find()) {
                    return null;
                }
            } catch (CountedText.Exhausted e) {
                return spec.gaveUp;
            }
            Object[] out = new Object[groups.length];
            for (int k = 0; k < groups.length; k++) {
                int g = groups[k];
                int a = m.start(g);
                if (a < 0) {
                    out[k] = null;
                } else if (ascii) {  // character offsets are byte offsets: slice the line's bytes
                    out[k] = slice(base, off, a, m.end(g));
                } else {
                    out[k] = UTF8String.fromString(m.group(g));
                }
            }
            return new GenericArrayData(out);
        }

        /** A view of the line's bytes [a, z): valid as long as the line (itself a view of the input row), which
         *  is how Spark's generated code uses it (an output row copies the bytes). */
        private static UTF8String slice(Object base, long off, int a, int z) {
            return UTF8String.fromAddress(base, off + a, z - a);
        }
    }
}
