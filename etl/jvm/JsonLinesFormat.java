package etl.jvm;

import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Set;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.io.Text;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.json.CreateJacksonParser;
import org.apache.spark.sql.catalyst.json.JSONOptions;
import org.apache.spark.sql.catalyst.json.JSONOptionsInRead;
import org.apache.spark.sql.catalyst.json.JacksonParser;
import org.apache.spark.sql.catalyst.util.BadRecordException;
import org.apache.spark.sql.catalyst.util.PermissiveMode$;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.execution.datasources.json.JsonFileFormat;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.apache.spark.util.SerializableConfiguration;
import org.apache.spark.util.SerializableConfiguration$;
import scala.Function1;
import scala.collection.AbstractIterator;
import scala.collection.Iterator;
import scala.collection.immutable.Map;
import scala.collection.immutable.Seq;
import scala.runtime.AbstractFunction1;
import scala.runtime.AbstractFunction2;

/**
 * Spark's JSON lines source, cheaper where etl reads it: PERMISSIVE with a corrupt-record column (etl's file source
 * sends those lines to dead letters).
 *
 * <p>Spark's reader then passes every row, well-formed ones too, through FailureSafeParser's copy into a row with
 * the corrupt-record column, which looks every field's index up by its name and boxes it through an Option (about
 * 100 ns a row: a tenth of the read). This reader runs the same steps -- Spark's line reader, Spark's JacksonParser
 * with the same options and pushed filters, FailureSafeParser's PERMISSIVE rules (a bad line: its partial rows, else
 * one row of nulls, with the line in the corrupt-record column; several rows from a JSON array) -- with the field
 * positions worked out once. Anything else (multiLine, archives, other modes, no corrupt-record column) is Spark's
 * own reader. The rows are the same as Spark's (tests/spark/test_json_lines_format.py compares them).
 *
 * <p>Top-level timestamp columns are read as text and converted by {@link IsoInstants} when the text is an ISO-8601
 * instant with its zone ({@code 2026-01-10T12:00:00.250Z}, {@code ...+05:30}): Spark's parser looks the zone up with
 * a regex for every value. Any other text, a malformed line, a timestampFormat or the legacy parser, or a pushed
 * filter on the column: the line is parsed again by Spark's parser with the real types, so the rows stay Spark's.
 *
 * <p>With the option {@code etlMaxRecordBytes} (etl's file source sets ETL_MAX_RECORD_MB), lines are read by
 * {@link BoundedLines}: a longer line, a line that is not UTF-8 or holds a lone surrogate's escape is a row of nulls
 * with its payload in the corrupt-record column and the reason in the column {@code etlRejectColumn} names.
 */
public class JsonLinesFormat extends JsonFileFormat {
    private static final long serialVersionUID = 1L;

    @Override
    public Function1<PartitionedFile, Iterator<InternalRow>> buildReader(SparkSession spark, StructType dataSchema,
            StructType partitionSchema, StructType requiredSchema, Seq<Filter> filters, Map<String, String> options,
            Configuration hadoopConf) {
        SQLConf conf = getSqlConf(spark);
        JSONOptions opts = new JSONOptionsInRead(options, conf.sessionLocalTimeZone(), conf.columnNameOfCorruptRecord());
        scala.Option<Object> corrupt = requiredSchema.getFieldIndex(opts.columnNameOfCorruptRecord());
        if (opts.multiLine() || opts.archiveFormatEnabled() || corrupt.isEmpty() || requiredSchema.length() < 2
                || opts.parseMode() != PermissiveMode$.MODULE$) {
            return super.buildReader(spark, dataSchema, partitionSchema, requiredSchema, filters, options, hadoopConf);
        }
        int c = (Integer) corrupt.get();
        long max = BoundedLines.maxOption(options);
        scala.Option<Object> rejectAt = BoundedLines.rejectColumn(options, requiredSchema);
        int r = max > 0 && rejectAt.isDefined() ? (Integer) rejectAt.get() : -1;
        StructField[] fields = requiredSchema.fields();
        StructField[] parsed = new StructField[fields.length - (r >= 0 ? 2 : 1)];
        int[] target = new int[parsed.length];
        for (int i = 0, j = 0; i < fields.length; i++) {
            if (i == c || i == r) continue;
            parsed[j] = fields[i];
            target[j++] = i;
        }
        Broadcast<SerializableConfiguration> bc =
            SerializableConfiguration$.MODULE$.broadcast(spark.sparkContext(), hadoopConf);
        Set<String> filtered = new HashSet<>();  // a pushed filter compares the column's real type
        scala.collection.Iterator<Filter> it = filters.iterator();
        while (it.hasNext()) {
            for (String ref : it.next().references()) filtered.add(ref);
        }
        StructType quick = IsoInstants.quickSchema(parsed, opts, filtered);
        return new Reader(new StructType(parsed), quick, opts, filters, bc, target, c, fields.length, max, r);
    }

    /** A file's rows (shipped to the tasks). */
    static final class Reader extends AbstractFunction1<PartitionedFile, Iterator<InternalRow>> implements Serializable {
        private static final long serialVersionUID = 1L;
        final StructType parsed;  // the required columns without the corrupt-record one
        final StructType quick;  // the same with the timestamps this reader converts as strings (null: none)
        final JSONOptions opts;
        final Seq<Filter> filters;
        final Broadcast<SerializableConfiguration> conf;
        final int[] target;  // where each parsed column goes in the required row
        final int corrupt;
        final int width;
        final long max;  // bytes a line may have (0: Spark's line reader, unchecked)
        final int reject;  // the reason column of rejected lines (-1: none)

        Reader(StructType parsed, StructType quick, JSONOptions opts, Seq<Filter> filters,
               Broadcast<SerializableConfiguration> conf, int[] target, int corrupt, int width, long max, int reject) {
            this.parsed = parsed;
            this.quick = quick;
            this.opts = opts;
            this.filters = filters;
            this.conf = conf;
            this.target = target;
            this.corrupt = corrupt;
            this.width = width;
            this.max = max;
            this.reject = reject;
        }

        @Override
        public Iterator<InternalRow> apply(PartitionedFile file) {
            JacksonParser parser = new JacksonParser(parsed, opts, true, filters);
            JacksonParser quickParser = quick == null ? null : new JacksonParser(quick, opts, true, filters);
            BoundedLines lines = BoundedLines.forTask(file, opts.lineSeparatorInRead(), conf.value().value(), max, true);
            return new Rows(this, parser, quickParser, lines);
        }
    }

    /** The rows of a file's lines: one reused row, as FailureSafeParser's (each is copied before the next). */
    static final class Rows extends AbstractIterator<InternalRow> {
        private final BoundedLines lines;
        private final JacksonParser parser;
        private final JacksonParser quickParser;  // timestamps as strings (null: none converted here)
        private final int[] quickTs;  // the parsed columns converted here
        private final IsoInstants.Gate gate = new IsoInstants.Gate();
        private final List<InternalRow> quickRows = new ArrayList<>();  // a line's rows from quickParser
        private int nextQuick;
        private final AbstractFunction2<JsonFactory, Text, JsonParser> textParser;
        private final AbstractFunction1<Text, UTF8String> toUtf8;
        private final int[] target;
        private final DataType[] types;
        private final int corrupt;
        private final int reject;
        private final GenericInternalRow out;
        private Iterator<InternalRow> pending;
        private InternalRow[] partial;  // a bad line's partial rows (or none: one row of nulls)
        private int nextPartial;
        private UTF8String bad;
        private UTF8String why;  // a rejected line's reason

        Rows(Reader r, JacksonParser parser, JacksonParser quickParser, BoundedLines lines) {
            this.lines = lines;
            this.parser = parser;
            this.quickParser = quickParser;
            quickTs = IsoInstants.converted(r.quick, r.parsed);
            this.target = r.target;
            this.corrupt = r.corrupt;
            this.reject = r.reject;
            this.out = new GenericInternalRow(r.width);
            StructField[] f = r.parsed.fields();
            types = new DataType[f.length];
            for (int i = 0; i < f.length; i++) types[i] = f[i].dataType();
            scala.Option<String> enc = r.opts.encoding();
            String encoding = enc.isDefined() ? enc.get() : null;
            textParser = new AbstractFunction2<JsonFactory, Text, JsonParser>() {
                @Override
                public JsonParser apply(JsonFactory factory, Text t) {
                    return encoding == null ? CreateJacksonParser.text(factory, t)
                                            : CreateJacksonParser.text(encoding, factory, t);
                }
            };
            toUtf8 = new AbstractFunction1<Text, UTF8String>() {
                @Override
                public UTF8String apply(Text t) {
                    return UTF8String.fromBytes(t.getBytes(), 0, t.getLength());
                }
            };
        }

        @Override
        public boolean hasNext() {
            while (true) {
                if (partial != null) {
                    if (nextPartial < Math.max(partial.length, 1)) return true;
                    partial = null;
                    bad = null;
                    why = null;
                }
                if (pending != null && pending.hasNext()) return true;
                if (nextQuick < quickRows.size()) return true;
                try {
                    if (!lines.next()) return false;
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
                Text line = lines.line();
                pending = null;
                if (lines.reason() != null) {  // not parsed: a row of nulls with its payload and reason
                    partial = new InternalRow[0];
                    nextPartial = 0;
                    bad = UTF8String.fromBytes(java.util.Arrays.copyOf(line.getBytes(), line.getLength()));
                    why = UTF8String.fromString(lines.reason());
                    continue;
                }
                if (quickParser != null && gate.open()) {
                    boolean converted = quick(line);
                    gate.count(converted);
                    if (converted) continue;
                }
                try {
                    pending = parser.parse(line, textParser, toUtf8).iterator();
                } catch (Exception thrown) {  // Scala code throws BadRecordException without declaring it
                    if (!(thrown instanceof BadRecordException)) throw rethrow(thrown);
                    BadRecordException e = (BadRecordException) thrown;
                    pending = null;
                    partial = e.partialResults().apply();
                    nextPartial = 0;
                    bad = e.record().apply();
                }
            }
        }

        /**
         * The line's rows through quickParser with their timestamps converted here; false (nothing kept) when the
         * line is malformed or a timestamp's text is not an ISO instant with its zone: Spark's parser decides.
         */
        private boolean quick(Text line) {
            quickRows.clear();
            nextQuick = 0;
            Iterator<InternalRow> got;
            try {
                got = quickParser.parse(line, textParser, toUtf8).iterator();
            } catch (Exception thrown) {
                if (thrown instanceof BadRecordException) return false;
                throw rethrow(thrown);
            }
            while (got.hasNext()) {
                InternalRow row = got.next();
                if (!IsoInstants.convert(row, quickTs)) {
                    quickRows.clear();
                    return false;
                }
                quickRows.add(row);
            }
            return true;
        }

        @Override
        public InternalRow next() {
            if (!hasNext()) throw new NoSuchElementException();
            InternalRow row = partial != null ? (partial.length == 0 ? null : partial[nextPartial])
                : pending != null ? pending.next() : quickRows.get(nextQuick++);
            if (partial != null) nextPartial++;
            int[] t = target;
            for (int i = 0; i < t.length; i++) out.update(t[i], row == null ? null : row.get(i, types[i]));
            out.update(corrupt, bad);
            if (reject >= 0) out.update(reject, why);
            return out;
        }

        private static RuntimeException rethrow(Exception e) {
            return e instanceof RuntimeException ? (RuntimeException) e : new RuntimeException(e);
        }
    }
}
