package etl.jvm;

import java.io.IOException;
import java.io.Serializable;
import java.io.StringWriter;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import org.apache.spark.SparkContext;
import org.apache.spark.unsafe.types.UTF8String;
import org.apache.spark.util.CollectionAccumulator;
import org.apache.spark.util.LongAccumulator;

/**
 * The rows a file sink's write keeps, counted while Spark's writer writes them, and the rows a stage failed on, set
 * aside in the same pass: the write's plan filters every row through {@link #keep} or {@link #good}.
 *
 * <p>The tally's accumulators travel with the plan (a literal of it). Spark adds a task's updates on the driver
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

        @Override
        public String toString() {
            return "etl rows tally";
        }
    }

    /** A new tally of one write. */
    public static Tally tally(SparkContext sc) {
        return new Tally(sc);
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
