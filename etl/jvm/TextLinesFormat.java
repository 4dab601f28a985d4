package etl.jvm;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.Serializable;
import java.util.NoSuchElementException;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.io.Text;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.execution.datasources.text.TextFileFormat;
import org.apache.spark.sql.execution.datasources.text.TextOptions;
import org.apache.spark.sql.sources.Filter;
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

/**
 * Spark's text source with etl's checks of every line ({@link BoundedLines}: a maximum size, valid UTF-8), for the
 * text file source: the option {@code etlMaxRecordBytes} (ETL_MAX_RECORD_MB) and a second string column named by
 * {@code etlRejectColumn} beside {@code value}. A rejected line is {@code value} = its payload (its first bytes, or
 * its bytes in base64) with the reason in the second column; a good line has that column null. Without the option
 * (or with {@code wholetext}), Spark's own reader.
 */
public class TextLinesFormat extends TextFileFormat {
    private static final long serialVersionUID = 1L;

    @Override
    public Function1<PartitionedFile, Iterator<InternalRow>> buildReader(SparkSession spark, StructType dataSchema,
            StructType partitionSchema, StructType requiredSchema, Seq<Filter> filters, Map<String, String> options,
            Configuration hadoopConf) {
        TextOptions opts = new TextOptions(options);
        long max = BoundedLines.maxOption(options);
        scala.Option<Object> reject = BoundedLines.rejectColumn(options, requiredSchema);
        if (max <= 0 || opts.wholeText()) {
            return super.buildReader(spark, dataSchema, partitionSchema, requiredSchema, filters, options, hadoopConf);
        }
        int r = reject.isDefined() ? (Integer) reject.get() : -1;
        int v = -1;
        for (int i = 0; i < requiredSchema.length(); i++) {
            if (i != r) v = i;
        }
        Broadcast<SerializableConfiguration> bc =
            SerializableConfiguration$.MODULE$.broadcast(spark.sparkContext(), hadoopConf);
        return new Reader(bc, opts.lineSeparatorInRead(), max, v, r, requiredSchema.length());
    }

    /** A file's rows (shipped to the tasks). */
    static final class Reader extends AbstractFunction1<PartitionedFile, Iterator<InternalRow>> implements Serializable {
        private static final long serialVersionUID = 1L;
        final Broadcast<SerializableConfiguration> conf;
        final scala.Option<byte[]> separator;
        final long max;
        final int value;  // the line's column (-1: not read)
        final int reject;  // the reason's column (-1: not read)
        final int width;

        Reader(Broadcast<SerializableConfiguration> conf, scala.Option<byte[]> separator, long max, int value,
               int reject, int width) {
            this.conf = conf;
            this.separator = separator;
            this.max = max;
            this.value = value;
            this.reject = reject;
            this.width = width;
        }

        @Override
        public Iterator<InternalRow> apply(PartitionedFile file) {
            BoundedLines lines = BoundedLines.forTask(file, separator, conf.value().value(), max, false);
            GenericInternalRow out = new GenericInternalRow(width);
            return new AbstractIterator<InternalRow>() {
                private boolean ready;
                private boolean more;

                @Override
                public boolean hasNext() {
                    if (!ready) {
                        try {
                            more = lines.next();
                        } catch (IOException e) {
                            throw new UncheckedIOException(e);
                        }
                        ready = true;
                    }
                    return more;
                }

                @Override
                public InternalRow next() {
                    if (!hasNext()) throw new NoSuchElementException();
                    ready = false;
                    Text t = lines.line();  // the row is used before the next line is read (Spark's rows are too)
                    if (value >= 0) out.update(value, UTF8String.fromBytes(t.getBytes(), 0, t.getLength()));
                    if (reject >= 0) {
                        String why = lines.reason();
                        out.update(reject, why == null ? null : UTF8String.fromString(why));
                    }
                    return out;
                }
            };
        }
    }
}
