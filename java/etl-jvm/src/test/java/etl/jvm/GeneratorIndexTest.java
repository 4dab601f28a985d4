package etl.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.streaming.Offset;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.junit.jupiter.api.Test;

/** GeneratorIndex: the offsets, limits, pacing and partitions of generator/reader.py's Python source. */
class GeneratorIndexTest {
    private static final AtomicLong CLOCK = new AtomicLong();

    private static GeneratorIndex.Stream stream(long count, double rate, long perBatch) {
        return new GeneratorIndex.Stream(new GeneratorIndex.Spec(count, rate, perBatch, 2), CLOCK::get);
    }

    private static long next(GeneratorIndex.Stream s, long start) {
        return ((GeneratorIndex.Index) s.latestOffset(new GeneratorIndex.Index(start), s.getDefaultReadLimit())).index;
    }

    private static String ranges(GeneratorIndex.Range[] parts) {
        List<String> out = new ArrayList<>();
        for (GeneratorIndex.Range r : parts) out.add(r.lo + "-" + r.hi);
        return String.join(",", out);
    }

    @Test
    void offsetsAreThePythonSourcesJson() {
        assertEquals("{\"index\": 2500}", new GeneratorIndex.Index(2500).json());
        Offset read = stream(-1, 0, 10).deserializeOffset("{\"index\": 2500}");  // as json.dumps wrote it
        assertEquals(new GeneratorIndex.Index(2500), read);
        assertEquals(7L, ((GeneratorIndex.Index) stream(-1, 0, 10).deserializeOffset("{\"index\":7}")).index);
        assertEquals(0L, ((GeneratorIndex.Index) stream(-1, 0, 10).initialOffset()).index);
        assertThrows(IllegalArgumentException.class, () -> GeneratorIndex.Index.parse("{\"offset\": 1}"));
        assertThrows(IllegalArgumentException.class, () -> GeneratorIndex.Index.parse("{\"index\": 1.5}"));
        assertThrows(IllegalArgumentException.class, () -> GeneratorIndex.Index.parse("{index"));
    }

    @Test
    void countedBatchesOfRowsPerBatch() {
        GeneratorIndex.Stream s = stream(2500, 0, 1000);
        assertEquals(1000L, next(s, 0));
        assertEquals(2000L, next(s, 1000));
        assertEquals(2500L, next(s, 2000));
        assertEquals(2500L, next(s, 2500));  // the end: no new batch
        assertEquals(0L, next(stream(0, 0, 1000), 0));
        assertEquals(2500L, ((GeneratorIndex.Index) s.latestOffset(new GeneratorIndex.Index(0),
            ReadLimit.allAvailable())).index);
        assertEquals(300L, ((GeneratorIndex.Index) s.latestOffset(new GeneratorIndex.Index(0),
            ReadLimit.maxRows(300))).index);
        assertEquals(1000L, ((GeneratorIndex.Index) s.latestOffset(new GeneratorIndex.Index(0),
            ReadLimit.maxFiles(3))).index);  // another limit: rowsPerBatch
    }

    @Test
    void unboundedWithoutRateReadsRowsPerBatchEachTime() {
        GeneratorIndex.Stream s = stream(-1, 0, 500);
        assertEquals(500L, next(s, 0));
        assertEquals(1500L, next(s, 1000));
        assertEquals(Long.MAX_VALUE, ((GeneratorIndex.Index) s.latestOffset(new GeneratorIndex.Index(Long.MAX_VALUE),
            s.getDefaultReadLimit())).index);
    }

    @Test
    void rateIsPacedByTheClockFromTheFirstOffsetAsked() {
        CLOCK.set(5_000_000_000L);
        GeneratorIndex.Stream s = stream(-1, 100, 1000);
        assertEquals(40L, next(s, 40));  // the clock starts here, at index 40
        CLOCK.addAndGet(2_500_000_000L);  // 2.5 s: 250 events
        assertEquals(290L, next(s, 40));
        CLOCK.addAndGet(20_000_000_000L);  // 22.5 s: 2,250 events, capped by rowsPerBatch
        assertEquals(1290L, next(s, 290));
        GeneratorIndex.Stream counted = stream(100, 100, 1000);
        next(counted, 0);
        CLOCK.addAndGet(10_000_000_000L);
        assertEquals(100L, next(counted, 0));  // the count ends it
        GeneratorIndex.Stream slow = stream(-1, 0.5, 1000);
        next(slow, 0);
        CLOCK.addAndGet(1_999_000_000L);
        assertEquals(0L, next(slow, 0));  // int(0.5 * 1.999) = 0: truncated as Python's int()
    }

    @Test
    void availableNowGivesOneBatchUnboundedAndEveryEventCounted() {
        GeneratorIndex.Stream s = stream(-1, 10, 700);
        s.prepareForTriggerAvailableNow();
        assertEquals(1400L, next(s, 700));
        assertEquals(1400L, next(s, 1400));  // its target stays
        GeneratorIndex.Stream counted = stream(2500, 0, 1000);
        counted.prepareForTriggerAvailableNow();
        assertEquals(1000L, next(counted, 0));
        assertEquals(2000L, next(counted, 1000));
        assertEquals(2500L, next(counted, 2000));
        assertEquals(2500L, next(counted, 2500));
    }

    @Test
    void partitionsAreIndexRangesOfAtLeastTenThousand() {
        assertEquals("", ranges(GeneratorIndex.split(5, 5, 4)));
        assertEquals("0-9999", ranges(GeneratorIndex.split(0, 9999, 4)));
        assertEquals("0-6667,6667-13334,13334-20001", ranges(GeneratorIndex.split(0, 20001, 4)));
        assertEquals("100-25100,25100-50100,50100-75100,75100-100100",
            ranges(GeneratorIndex.split(100, 100_100, 4)));
        assertEquals("0-33334,33334-66668,66668-100000", ranges(GeneratorIndex.split(0, 100_000, 3)));
    }

    @Test
    void aPartitionsRowsAreItsIndices() throws Exception {
        GeneratorIndex.Stream s = stream(-1, 0, 10);
        InputPartition[] parts = s.planInputPartitions(new GeneratorIndex.Index(3), new GeneratorIndex.Index(8));
        assertEquals(1, parts.length);
        List<Long> got = new ArrayList<>();
        try (PartitionReader<InternalRow> r = s.createReaderFactory().createReader(parts[0])) {
            while (r.next()) got.add(r.get().getLong(0));
        }
        assertEquals(Arrays.asList(3L, 4L, 5L, 6L, 7L), got);
    }

    @Test
    void aBatchReadIsEveryCountedEventAndOneEmptyPartitionWithoutACount() {
        GeneratorIndex.IndexScan counted = new GeneratorIndex.IndexScan(new GeneratorIndex.Spec(20_001, 0, 10, 4));
        assertEquals("0-6667,6667-13334,13334-20001",
            ranges((GeneratorIndex.Range[]) counted.toBatch().planInputPartitions()));
        for (long count : new long[] {-1, 0}) {
            GeneratorIndex.IndexScan none = new GeneratorIndex.IndexScan(new GeneratorIndex.Spec(count, 0, 10, 4));
            assertEquals("0-0", ranges((GeneratorIndex.Range[]) none.toBatch().planInputPartitions()));
        }
        assertEquals(GeneratorIndex.SCHEMA, counted.readSchema());
    }
}
