package etl.jvm;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.objects.StaticInvoke;
import org.apache.spark.sql.catalyst.json.CreateJacksonParser;
import org.apache.spark.sql.catalyst.json.JSONOptions;
import org.apache.spark.sql.catalyst.json.JacksonParser;
import org.apache.spark.sql.catalyst.util.BadRecordException;
import org.apache.spark.sql.classic.ExpressionUtils;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.AbstractDataType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.ObjectType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import scala.collection.Iterator;
import scala.runtime.AbstractFunction1;
import scala.runtime.AbstractFunction2;

/**
 * {@code from_json(text, schema, {mode: PERMISSIVE, columnNameOfCorruptRecord: c})}, the same struct for every input,
 * without FailureSafeParser's copy of every row.
 *
 * <p>Spark's from_json with a corrupt-record column (etl's message sources and its `parse` transform send those
 * values to dead letters) passes every value, well-formed ones too, through FailureSafeParser, which copies the
 * parsed row into a row with the corrupt-record column, looking every field's index up by its name and boxing it
 * through an Option. This runs the same steps -- JSONOptions from the same options and session time zone, Spark's
 * JacksonParser over the schema without the corrupt-record column and without arrays as structs (from_json's),
 * FailureSafeParser's PERMISSIVE rules (a bad value: its first partial row, else a row of nulls, with the text in
 * the corrupt-record column), the first row of a value or NULL -- with the field positions worked out once. The
 * struct is the same as from_json's (tests/spark/test_json_parse.py compares them on hostile values). Top-level
 * timestamps in ISO-8601 with their zone are converted by {@link IsoInstants}; a value with any other timestamp text
 * is parsed again by Spark's parser with the real types.
 */
public final class JsonParse {
    private JsonParse() {}

    private static final PerTask<Spec, Task> TASKS = new PerTask<>();

    /** The schema (with its corrupt-record column), the options and the time zone (a literal of the plan). */
    public static final class Spec implements Serializable {
        private static final long serialVersionUID = 1L;
        final StructType schema;
        final String corrupt;
        final String timeZone;

        Spec(StructType schema, String corrupt, String timeZone) {
            this.schema = schema;
            this.corrupt = corrupt;
            this.timeZone = timeZone;
        }

        @Override
        public String toString() {
            return "etl json parse";
        }
    }

    /** A task's parser and its output row (one thread). */
    static final class Task {
        final JacksonParser parser;
        JacksonParser quickParser;  // timestamps as text (null: no column converted by IsoInstants, or no more)
        final int[] quickTs;
        final IsoInstants.Gate gate = new IsoInstants.Gate();
        final GenericInternalRow out;
        final int[] target;  // where each parsed field goes in the output row
        final DataType[] types;
        final int corrupt;
        final AbstractFunction2<JsonFactory, UTF8String, JsonParser> create;
        final AbstractFunction1<UTF8String, UTF8String> same;

        Task(Spec spec) {
            java.util.Map<String, String> given = new java.util.HashMap<>();
            given.put("mode", "PERMISSIVE");
            given.put("columnNameOfCorruptRecord", spec.corrupt);
            given.put("maxStringLen", String.valueOf(Integer.MAX_VALUE));  // sources cap values (ETL_MAX_RECORD_MB)
            scala.collection.immutable.Map<String, String> options =
                scala.collection.immutable.Map$.MODULE$.from(scala.jdk.javaapi.CollectionConverters.asScala(given));
            JSONOptions opts = new JSONOptions(options, spec.timeZone, spec.corrupt);
            StructField[] fields = spec.schema.fields();
            corrupt = spec.schema.fieldIndex(spec.corrupt);
            StructField[] parsed = new StructField[fields.length - 1];
            target = new int[parsed.length];
            types = new DataType[parsed.length];
            for (int i = 0, j = 0; i < fields.length; i++) {
                if (i == corrupt) continue;
                parsed[j] = fields[i];
                types[j] = fields[i].dataType();
                target[j++] = i;
            }
            StructType real = new StructType(parsed);
            parser = new JacksonParser(real, opts, false, scala.collection.immutable.List$.MODULE$.empty());
            StructType quick = IsoInstants.quickSchema(parsed, opts, java.util.Set.of());
            quickParser = quick == null ? null : new JacksonParser(quick, opts, false,
                scala.collection.immutable.List$.MODULE$.empty());
            quickTs = IsoInstants.converted(quick, real);
            out = new GenericInternalRow(fields.length);
            create = new AbstractFunction2<JsonFactory, UTF8String, JsonParser>() {
                @Override
                public JsonParser apply(JsonFactory factory, UTF8String text) {
                    return CreateJacksonParser.utf8String(factory, text);
                }
            };
            same = new AbstractFunction1<UTF8String, UTF8String>() {
                @Override
                public UTF8String apply(UTF8String text) {
                    return text;
                }
            };
        }

        InternalRow parse(UTF8String text) {
            InternalRow row = quickParser == null ? null : quick(text);
            if (row != null) return copied(row, null);
            UTF8String bad = null;
            try {
                Iterator<InternalRow> rows = parser.parse(text, create, same).iterator();
                if (!rows.hasNext()) return null;  // no JSON value (from_json: NULL)
                row = rows.next();
            } catch (Exception thrown) {  // Scala code throws BadRecordException without declaring it
                if (!(thrown instanceof BadRecordException)) {
                    throw thrown instanceof RuntimeException ? (RuntimeException) thrown : new RuntimeException(thrown);
                }
                BadRecordException e = (BadRecordException) thrown;
                InternalRow[] partial = e.partialResults().apply();
                row = partial.length == 0 ? null : partial[0];
                bad = e.record().apply();
            }
            return copied(row, bad);
        }

        /**
         * The value's first row through quickParser, its timestamps converted; null: Spark's parser decides (and
         * once the gate closes, decides alone).
         */
        private InternalRow quick(UTF8String text) {
            InternalRow row = null;
            try {
                Iterator<InternalRow> rows = quickParser.parse(text, create, same).iterator();
                if (rows.hasNext()) {
                    row = rows.next();
                    if (!IsoInstants.convert(row, quickTs)) row = null;
                }
            } catch (Exception thrown) {
                if (!(thrown instanceof BadRecordException)) {
                    throw thrown instanceof RuntimeException ? (RuntimeException) thrown : new RuntimeException(thrown);
                }
            }
            gate.count(row != null);
            if (!gate.open()) quickParser = null;
            return row;
        }

        private InternalRow copied(InternalRow row, UTF8String bad) {
            int[] t = target;
            for (int i = 0; i < t.length; i++) out.update(t[i], row == null ? null : row.get(i, types[i]));
            out.update(corrupt, bad);
            return out;
        }
    }

    /**
     * The column {@code from_json(text, schema, PERMISSIVE, corrupt)} would give. `schemaJson`: the struct's JSON
     * (DataType.json), the corrupt-record column (a string) among its fields.
     */
    public static Column parsed(Column text, String schemaJson, String corrupt) {
        StructType schema = (StructType) DataType.fromJson(schemaJson).asNullable();
        Spec spec = new Spec(schema, corrupt, SQLConf.get().sessionLocalTimeZone());
        List<Expression> args = new ArrayList<>();
        args.add(new Literal(spec, new ObjectType(Spec.class)));
        args.add(ExpressionUtils.expression(text));
        StaticInvoke call = new StaticInvoke(JsonParse.class, schema, "parse",
            scala.jdk.javaapi.CollectionConverters.asScala(args).toList(),
            scala.jdk.javaapi.CollectionConverters.asScala(new ArrayList<AbstractDataType>()).toList(),
            true, true, true, scala.Option.empty());
        return ExpressionUtils.column(call);
    }

    /** One value's struct (NULL text: NULL, as from_json); the row is reused for the next value. */
    public static InternalRow parse(Spec spec, UTF8String text) {
        return TASKS.get(spec, Task::new).parse(text);
    }
}
