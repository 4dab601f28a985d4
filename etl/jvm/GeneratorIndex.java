package etl.jvm;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.LongSupplier;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.connector.read.streaming.Offset;
import org.apache.spark.sql.connector.read.streaming.ReadAllAvailable;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.apache.spark.sql.connector.read.streaming.ReadMaxRows;
import org.apache.spark.sql.connector.read.streaming.SupportsTriggerAvailableNow;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The generator source's event indices (etl/components/sources/generator): a Spark data source (DataSource V2,
 * {@code format("etl.jvm.GeneratorIndex")}) of one column {@code index} (bigint), streaming and batch, whose offsets
 * the JVM keeps. The events' fields are made from the indices by the generator's numpy code in Spark's shared Python
 * workers (mapInArrow). A query of it starts no Python process of its own, where PySpark's Python streaming data
 * source keeps one per query for its offsets and partitions (about 100 MB each).
 *
 * <p>Its offsets, pacing, read limits and partitions are those of the Python source it replaces
 * (generator/reader.py's GeneratorStreamReader), so a checkpoint written by either resumes with the other:
 * offsets {@code {"index": N}} (the next event's index); {@code count} (absent: unbounded) ends the stream;
 * {@code rate} (events per second) paces an unbounded run by the wall clock from the first offset asked; a micro-batch
 * reads at most {@code rowsPerBatch} events (the default read limit); under Trigger.AvailableNow an unbounded
 * generator gives one micro-batch of {@code rowsPerBatch} events, a counted one every event up to {@code count}; the
 * partitions are index ranges of at least 10,000 events, at most {@code partitions} of them.
 */
public final class GeneratorIndex implements TableProvider {
    static final String COLUMN = "index";
    static final StructType SCHEMA = new StructType().add(COLUMN, DataTypes.LongType, false);
    static final long MIN_PART = 10_000;

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        return SCHEMA;
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        return new IndexTable();
    }

    /** The source's options: {@code count}, {@code rate}, {@code rowsPerBatch}, {@code partitions}. */
    static final class Spec implements Serializable {
        private static final long serialVersionUID = 1L;
        final long count;  // -1: unbounded
        final double rate;  // 0: no pacing
        final long perBatch;
        final int partitions;

        Spec(long count, double rate, long perBatch, int partitions) {
            if (perBatch < 1) throw new IllegalArgumentException("rowsPerBatch must be at least 1, got " + perBatch);
            this.count = count;
            this.rate = rate;
            this.perBatch = perBatch;
            this.partitions = Math.max(1, partitions);
        }

        static Spec of(CaseInsensitiveStringMap o) {
            String count = o.get("count");
            String rate = o.get("rate");
            return new Spec(count == null ? -1 : Long.parseLong(count), rate == null ? 0 : Double.parseDouble(rate),
                o.getLong("rowsPerBatch", 100_000), o.getInt("partitions", 2));
        }
    }

    /** An offset: the index of the next event, written {@code {"index": N}} as the Python source's json.dumps. */
    static final class Index extends Offset {
        private static final ObjectMapper JSON = new ObjectMapper();
        final long index;

        Index(long index) {
            this.index = index;
        }

        @Override
        public String json() {
            return "{\"index\": " + index + "}";
        }

        static Index parse(String json) {
            JsonNode node;
            try {
                node = JSON.readTree(json);
            } catch (JsonProcessingException e) {
                throw new IllegalArgumentException("not a generator offset: " + json, e);
            }
            JsonNode n = node == null ? null : node.get(COLUMN);
            if (n == null || !n.canConvertToLong() || !n.isIntegralNumber()) {
                throw new IllegalArgumentException("not a generator offset (want {\"index\": N}): " + json);
            }
            return new Index(n.asLong());
        }
    }

    /** Events [lo, hi). */
    static final class Range implements InputPartition {
        private static final long serialVersionUID = 1L;
        final long lo;
        final long hi;

        Range(long lo, long hi) {
            this.lo = lo;
            this.hi = hi;
        }
    }

    /** [lo, hi) in at most `parts` ranges of at least MIN_PART events each (the last may be shorter). */
    static Range[] split(long lo, long hi, int parts) {
        if (hi <= lo) return new Range[0];
        long n = hi - lo;
        long k = Math.max(1, Math.min(parts, (n + MIN_PART - 1) / MIN_PART));
        long step = (n + k - 1) / k;
        List<Range> out = new ArrayList<>();
        for (long a = lo; a < hi; a += step) out.add(new Range(a, Math.min(hi, a + step)));
        return out.toArray(new Range[0]);
    }

    static final class IndexTable implements SupportsRead {
        @Override
        public String name() {
            return "etl_generator";
        }

        @Override
        public Column[] columns() {
            return new Column[] {Column.create(COLUMN, DataTypes.LongType, false)};
        }

        @Override
        public Set<TableCapability> capabilities() {
            return EnumSet.of(TableCapability.BATCH_READ, TableCapability.MICRO_BATCH_READ);
        }

        @Override
        public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
            Spec spec = Spec.of(options);
            return () -> new IndexScan(spec);
        }
    }

    static final class IndexScan implements Scan {
        final Spec spec;

        IndexScan(Spec spec) {
            this.spec = spec;
        }

        @Override
        public StructType readSchema() {
            return SCHEMA;
        }

        @Override
        public String description() {
            return "etl generator indices";
        }

        @Override
        public Batch toBatch() {
            return new Batch() {
                @Override
                public InputPartition[] planInputPartitions() {
                    Range[] parts = split(0, Math.max(0, spec.count), spec.partitions);
                    return parts.length > 0 ? parts : new Range[] {new Range(0, 0)};
                }

                @Override
                public PartitionReaderFactory createReaderFactory() {
                    return new Rows();
                }
            };
        }

        @Override
        public MicroBatchStream toMicroBatchStream(String checkpointLocation) {
            return new Stream(spec, System::nanoTime);
        }
    }

    /** The indices of a range, one row each. */
    static final class Rows implements PartitionReaderFactory {
        private static final long serialVersionUID = 1L;

        @Override
        public PartitionReader<InternalRow> createReader(InputPartition partition) {
            Range r = (Range) partition;
            return new PartitionReader<InternalRow>() {
                private long next = r.lo - 1;

                @Override
                public boolean next() {
                    return ++next < r.hi;
                }

                @Override
                public InternalRow get() {
                    return new GenericInternalRow(new Object[] {next});
                }

                @Override
                public void close() {}
            };
        }
    }

    /** The stream: its offsets, read limits, pacing and partitions. */
    static final class Stream implements MicroBatchStream, SupportsTriggerAvailableNow {
        final Spec spec;
        final LongSupplier nanos;
        long t0 = Long.MIN_VALUE;  // the clock at the first offset asked (MIN_VALUE: not asked yet)
        long base;  // the index asked then
        boolean availableNow;
        long target = -1;  // AvailableNow: the index it ends at (-1: not fixed yet)

        Stream(Spec spec, LongSupplier nanos) {
            this.spec = spec;
            this.nanos = nanos;
        }

        @Override
        public Offset initialOffset() {
            return new Index(0);
        }

        @Override
        public Offset deserializeOffset(String json) {
            return Index.parse(json);
        }

        @Override
        public void prepareForTriggerAvailableNow() {
            availableNow = true;
        }

        /** The index this batch may read up to before the read limit: count, pacing, AvailableNow's target. */
        long limit(long start) {
            if (availableNow) {
                if (target < 0) target = spec.count >= 0 ? spec.count : start + spec.perBatch;
                return target;
            }
            long end = spec.count;
            if (spec.rate > 0) {
                long now = nanos.getAsLong();
                if (t0 == Long.MIN_VALUE) {
                    t0 = now;
                    base = start;
                }
                long paced = base + (long) (spec.rate * ((now - t0) / 1e9));
                end = end < 0 ? paced : Math.min(end, paced);
            }
            return end < 0 ? start + spec.perBatch : end;
        }

        @Override
        public Offset latestOffset(Offset start, ReadLimit limit) {
            long s = ((Index) start).index;
            long end = limit(s);
            if (limit instanceof ReadMaxRows m) {
                end = Math.min(end, s + m.maxRows());
            } else if (!(limit instanceof ReadAllAvailable)) {
                end = Math.min(end, s + spec.perBatch);
            }
            return new Index(Math.max(s, end));
        }

        @Override
        public ReadLimit getDefaultReadLimit() {
            return ReadLimit.maxRows(spec.perBatch);
        }

        @Override
        public Offset latestOffset() {
            throw new UnsupportedOperationException("the generator's offsets are asked with a read limit");
        }

        @Override
        public InputPartition[] planInputPartitions(Offset start, Offset end) {
            return split(((Index) start).index, ((Index) end).index, spec.partitions);
        }

        @Override
        public PartitionReaderFactory createReaderFactory() {
            return new Rows();
        }

        @Override
        public void commit(Offset end) {}

        @Override
        public void stop() {}
    }
}
