package etl.jvm;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.json.JSONOptions;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Timestamps of JSON text converted without Spark's parser, where that gives Spark's value: an ISO-8601 instant
 * with its zone, {@code yyyy-MM-ddTHH:mm:ss[.f{1,6}](Z|+hh:mm|-hh:mm)}, names its offset, so any zone setting reads
 * the same microseconds. Spark's JacksonParser looks a timestamp's zone up with a regex for every value (a fifth of
 * the read of a log line with one); etl's JSON readers (JsonLinesFormat, JsonParse) parse top-level timestamp
 * columns as text ({@link #quickSchema}), convert that text here ({@link #convert}), and give any other text --
 * another form, a number, a bad date -- to Spark's parser with the real types.
 */
public final class IsoInstants {
    static final long NOT = Long.MIN_VALUE;  // not of that form: Spark's parser decides
    private static final int[] DAYS = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

    private IsoInstants() {
    }

    /**
     * Whether a reader still converts timestamps here: a value this cannot convert is parsed twice (here, then by
     * Spark's parser), so once more than one value in 8 went to Spark's parser (after the first 64) the reader's
     * task parses with the real types only (timestamps without a zone, in another form).
     */
    static final class Gate {
        private int tries;
        private int misses;
        private boolean open = true;

        boolean open() {
            return open;
        }

        void count(boolean converted) {
            tries++;
            if (!converted) misses++;
            if (tries >= 64 && misses * 8 > tries) open = false;
        }
    }

    /**
     * `parsed` with its top-level timestamp columns as strings (but those named in `kept`: a pushed filter compares
     * their real type); null when none is left or the options name a timestamp format (or the legacy parser).
     */
    static StructType quickSchema(StructField[] parsed, JSONOptions opts, Set<String> kept) {
        if (opts.timestampFormatInRead().isDefined()) return null;
        StructField[] quick = parsed.clone();
        boolean any = false;
        for (int i = 0; i < quick.length; i++) {
            StructField f = quick[i];
            if (f.dataType() == DataTypes.TimestampType && !kept.contains(f.name())) {
                quick[i] = new StructField(f.name(), DataTypes.StringType, f.nullable(), f.metadata());
                any = true;
            }
        }
        return any ? new StructType(quick) : null;
    }

    /** The columns `quick` reads as text that `parsed` types as timestamps (none when `quick` is null). */
    static int[] converted(StructType quick, StructType parsed) {
        List<Integer> cols = new ArrayList<>();
        for (int i = 0; quick != null && i < quick.length(); i++) {
            if (quick.fields()[i].dataType() != parsed.fields()[i].dataType()) cols.add(i);
        }
        return cols.stream().mapToInt(Integer::intValue).toArray();
    }

    /** The texts of `row`'s columns `cols` replaced by their microseconds; false (row half done) when one is not
     *  an ISO instant with its zone. */
    static boolean convert(InternalRow row, int[] cols) {
        for (int i : cols) {
            if (row.isNullAt(i)) continue;
            long micros = micros(row.getUTF8String(i));
            if (micros == NOT) return false;
            row.update(i, micros);
        }
        return true;
    }

    /** The instant's microseconds since the epoch, or NOT (a space between date and time, which Spark also reads,
     *  is left to Spark's parser). */
    static long micros(UTF8String s) {
        int n = s.numBytes();
        if (n < 20 || n > 32) return NOT;
        int y = digits(s, 0, 4);
        int mo = digits(s, 5, 2);
        int d = digits(s, 8, 2);
        int h = digits(s, 11, 2);
        int mi = digits(s, 14, 2);
        int sec = digits(s, 17, 2);
        if (s.getByte(4) != '-' || s.getByte(7) != '-' || s.getByte(10) != 'T' || s.getByte(13) != ':'
                || s.getByte(16) != ':' || y < 1 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0
                || mi > 59 || sec < 0 || sec > 59) {
            return NOT;
        }
        boolean leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        if (d > (mo == 2 && leap ? 29 : DAYS[mo - 1])) return NOT;
        int i = 19;
        long frac = 0;
        if (s.getByte(i) == '.') {
            int start = ++i;
            while (i < n && s.getByte(i) >= '0' && s.getByte(i) <= '9') frac = frac * 10 + (s.getByte(i++) - '0');
            int k = i - start;
            if (k < 1 || k > 6) return NOT;
            for (; k < 6; k++) frac *= 10;
        }
        if (i >= n) return NOT;
        byte z = s.getByte(i);
        int offset;
        if (z == 'Z' && i + 1 == n) {
            offset = 0;
        } else if ((z == '+' || z == '-') && i + 6 == n && s.getByte(i + 3) == ':') {
            int oh = digits(s, i + 1, 2);
            int om = digits(s, i + 4, 2);
            if (oh < 0 || oh > 17 || om < 0 || om > 59) return NOT;
            offset = (z == '-' ? -1 : 1) * (oh * 3600 + om * 60);
        } else {
            return NOT;
        }
        long seconds = epochDay(y, mo, d) * 86400L + h * 3600L + mi * 60L + sec - offset;
        return seconds * 1_000_000L + frac;
    }

    /** `len` decimal digits from byte `at`; -1 when one is not a digit. */
    private static int digits(UTF8String s, int at, int len) {
        int v = 0;
        for (int i = at; i < at + len; i++) {
            int c = s.getByte(i) - '0';
            if (c < 0 || c > 9) return -1;
            v = v * 10 + c;
        }
        return v;
    }

    /** Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil). */
    static long epochDay(int y, int m, int d) {
        long yy = m <= 2 ? y - 1 : y;
        long era = Math.floorDiv(yy, 400);
        long yoe = yy - era * 400;
        long doy = (153L * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
        long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        return era * 146097 + doe - 719468;
    }
}
