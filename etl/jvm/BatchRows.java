package etl.jvm;

import java.io.IOException;
import java.io.Serializable;
import java.io.StringWriter;

import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.DataFrameWriter;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.objects.StaticInvoke;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.classic.ExpressionUtils;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.AbstractDataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.ObjectType;
import org.apache.spark.unsafe.types.UTF8String;
import org.apache.spark.util.CollectionAccumulator;
import org.apache.spark.util.LongAccumulator;

/**
 * The rows a file sink's write keeps, counted while Spark's writer writes them, and the rows a stage failed on, set
 * aside in the same pass: the write's plan filters every row through {@link #keep} or {@link #good}.
 *
 * <p>{@link #counted} builds that filter in one call from Python (a call per Column operation would be dozens of
 * py4j round trips per micro-batch). The tally's accumulators travel with the plan (a literal of it). Spark adds a task's updates on the driver
 * once, when the task succeeds, before the write job ends; a failed attempt adds nothing. Cheaper than
 * DataFrame.observe, whose aggregation runs row by row outside the generated code.
 */
public final class BatchRows {
    private BatchRows() {}

    /** One write's counts (its toString is short: plans print their literals). */
    public static final class Tally implements Serializable {
        private static final long serialVersionUID = 1L;
        final LongAccumulator rows;
        final CollectionAccumulator<String[]> failed;

        public Tally(SparkContext sc) {
            rows = sc.longAccumulator("etl rows written");
            failed = sc.collectionAccumulator("etl rows failed");
        }

        public long rows() {
            return rows.value();
        }

        /** The failed rows as one JSON array of [err, payload] pairs (one py4j call for all of them). */
        public String failedJson() throws IOException {
            StringWriter out = new StringWriter();
            try (JsonGenerator g = new JsonFactory().createGenerator(out)) {
                g.writeStartArray();
                for (String[] r : failed.value()) {
                    g.writeStartArray();
                    g.writeString(r[0]);
                    g.writeString(r[1]);
                    g.writeEndArray();
                }
                g.writeEndArray();
            }
            return out.toString();
        }

        /** The rows written and the failed rows as one JSON array, [rows, [[err, payload], ...]] (one py4j call). */
        public String json() throws IOException {
            return "[" + rows() + "," + failedJson() + "]";
        }

        @Override
        public String toString() {
            return "etl rows tally";
        }
    }

    /**
     * The rows of `frame` to write, counted as they pass, and their tally: {frame filtered, tally}. With `err` (the
     * stage's error column) and `payload`, rows with an error are set aside instead of written and both columns are
     * dropped; without (null), every row is written.
     */
    public static Object[] counted(Dataset<Row> frame, String err, String payload) {
        Tally tally = new Tally(frame.sparkSession().sparkContext());
        List<Expression> args = new ArrayList<>();
        args.add(new Literal(tally, new ObjectType(Tally.class)));
        if (err != null) {
            args.add(ExpressionUtils.expression(functions.col("`" + err + "`").cast("string")));
            args.add(ExpressionUtils.expression(functions.col("`" + payload + "`").cast("string")));
        }
        StaticInvoke test = new StaticInvoke(BatchRows.class, DataTypes.BooleanType, err != null ? "good" : "keep",
            scala.jdk.javaapi.CollectionConverters.asScala(args).toList(),
            scala.jdk.javaapi.CollectionConverters.asScala(new ArrayList<AbstractDataType>()).toList(),
            false, false, false, scala.Option.empty());
        Dataset<Row> rows = frame.where(ExpressionUtils.column(test));
        if (err != null) {
            List<String> drop = List.of(err, payload);
            rows = rows.drop(scala.jdk.javaapi.CollectionConverters.asScala(drop).toList());
        }
        return new Object[] {rows, tally};
    }

    /**
     * The rows of `frame` counted as {@link #counted} counts them and written by Spark's writer `format` into `path`
     * (replacing what a failed try left), in one call from Python (each step of the DataFrameWriter is a py4j round
     * trip per micro-batch otherwise): `select` (SQL, may be null) shapes the counted rows, `options` are the
     * writer's as `key=value` lines. Returns the tally, read once the write has ended.
     */
    @SuppressWarnings("unchecked")
    public static Tally written(Dataset<Row> frame, String err, String payload, String select, String format,
                                String path, String options) {
        Object[] got = counted(frame, err, payload);
        Dataset<Row> rows = (Dataset<Row>) got[0];
        if (select != null) rows = rows.selectExpr(select);
        DataFrameWriter<Row> writer = rows.write().format(format).mode("overwrite");
        for (String line : options.split("\n")) {
            int eq = line.indexOf('=');
            if (eq > 0) writer = writer.option(line.substring(0, eq), line.substring(eq + 1));
        }
        writer.save(path);
        return (Tally) got[1];
    }

    /** Every row is written: counted. */
    public static boolean keep(Tally t) {
        t.rows.add(1L);
        return true;
    }

    /** A row without a stage error is written (counted); one with an error is set aside (err, payload). */
    public static boolean good(Tally t, UTF8String err, UTF8String payload) {
        if (err == null) {
            t.rows.add(1L);
            return true;
        }
        t.failed.add(new String[] {err.toString(), payload == null ? null : payload.toString()});
        return false;
    }
}
