package etl.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Instant;
import java.time.temporal.ChronoUnit;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.Test;

/** JsonParse: from_json's PERMISSIVE struct (partial rows, the text in the corrupt-record column). */
class JsonParseTest {
    private static final StructType SCHEMA = new StructType()
        .add("a", DataTypes.IntegerType)
        .add("b", DataTypes.StringType)
        .add("ts", DataTypes.TimestampType)
        .add("_corrupt", DataTypes.StringType);
    private static final JsonParse.Spec SPEC = new JsonParse.Spec(SCHEMA, "_corrupt", "UTC");

    private static InternalRow parse(String text) {
        return JsonParse.parse(SPEC, UTF8String.fromString(text));
    }

    private static long micros(String iso) {
        return ChronoUnit.MICROS.between(Instant.EPOCH, Instant.parse(iso));
    }

    @Test
    void aGoodValue() {
        InternalRow r = parse("{\"a\": 1, \"b\": \"x\", \"ts\": \"2026-01-10T12:00:00.250Z\", \"extra\": [1]}");
        assertEquals(1, r.getInt(0));
        assertEquals("x", r.getUTF8String(1).toString());
        assertEquals(micros("2026-01-10T12:00:00.250Z"), r.getLong(2));
        assertTrue(r.isNullAt(3));
    }

    @Test
    void aZoneOffsetNamesTheSameInstant() {
        assertEquals(micros("2026-01-10T06:30:00Z"), parse("{\"ts\": \"2026-01-10T12:00:00+05:30\"}").getLong(2));
    }

    @Test
    void malformedJsonIsARowOfNullsWithTheText() {
        InternalRow r = parse("{\"a\": 1, ");
        assertTrue(r.isNullAt(0));
        assertTrue(r.isNullAt(1));
        assertTrue(r.isNullAt(2));
        assertEquals("{\"a\": 1, ", r.getUTF8String(3).toString());
    }

    @Test
    void aWrongTypeKeepsThePartialRow() {
        String text = "{\"a\": \"one\", \"b\": \"y\"}";
        InternalRow r = parse(text);
        assertTrue(r.isNullAt(0));
        assertEquals("y", r.getUTF8String(1).toString());
        assertEquals(text, r.getUTF8String(3).toString());
    }

    @Test
    void noJsonValueIsNull() {
        assertNull(parse(""));
        assertNull(parse("   "));
    }
}
