package etl.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.nio.channels.Channels;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.VectorUnloader;
import org.apache.arrow.vector.ipc.WriteChannel;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;

/** LookupTables: a store of etl.compile.lookups.store's layout (Arrow chunks in RocksDB) loaded and looked up. */
class LookupTablesTest {
    @TempDir
    Path dir;

    @Test
    void keyHashesAreThoseOfTheStoresPythonHash() {
        JsonNode keys = Fixtures.read("keyhash.json").get("keys");
        assertEquals(9, keys.size());
        for (JsonNode k : keys) {
            byte[] key = k.get("key").asText().getBytes(StandardCharsets.UTF_8);
            assertEquals(k.get("hash").asLong(), LookupTables.keyHash(key), k.toString());
        }
    }

    private static final Schema SCHEMA = new Schema(List.of(
        Field.nullable("_etl_key", ArrowType.Utf8.INSTANCE),
        Field.nullable("name", ArrowType.Utf8.INSTANCE),
        Field.nullable("n", new ArrowType.Int(64, true)),
        Field.nullable("score", new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE)),
        new Field("ok", FieldType.nullable(ArrowType.Bool.INSTANCE), null)));

    /** A store folder as etl.compile.lookups.store builds it: schema.arrow and db/ with one chunk per batch. */
    private String store(String version, Object[][]... chunks) throws Exception {
        Path v = dir.resolve(version);
        Files.createDirectories(v);
        ByteArrayOutputStream schema = new ByteArrayOutputStream();
        MessageSerializer.serialize(new WriteChannel(Channels.newChannel(schema)), SCHEMA);
        Files.write(v.resolve("schema.arrow"), schema.toByteArray());
        RocksDB.loadLibrary();
        try (BufferAllocator alloc = new RootAllocator();
             Options opt = new Options().setCreateIfMissing(true);
             RocksDB db = RocksDB.open(opt, v.resolve("db").toString())) {
            for (int c = 0; c < chunks.length; c++) {
                try (VectorSchemaRoot root = VectorSchemaRoot.create(SCHEMA, alloc)) {
                    Object[][] rows = chunks[c];
                    root.allocateNew();
                    for (int i = 0; i < rows.length; i++) {
                        ((VarCharVector) root.getVector(0)).setSafe(i, ((String) rows[i][0]).getBytes(StandardCharsets.UTF_8));
                        if (rows[i][1] != null) ((VarCharVector) root.getVector(1)).setSafe(i, ((String) rows[i][1]).getBytes(StandardCharsets.UTF_8));
                        if (rows[i][2] != null) ((BigIntVector) root.getVector(2)).setSafe(i, (Long) rows[i][2]);
                        if (rows[i][3] != null) ((Float8Vector) root.getVector(3)).setSafe(i, (Double) rows[i][3]);
                        if (rows[i][4] != null) ((BitVector) root.getVector(4)).setSafe(i, (Boolean) rows[i][4] ? 1 : 0);
                    }
                    root.setRowCount(rows.length);
                    ByteArrayOutputStream batch = new ByteArrayOutputStream();
                    try (ArrowRecordBatch rb = new VectorUnloader(root).getRecordBatch()) {
                        MessageSerializer.serialize(new WriteChannel(Channels.newChannel(batch)), rb);
                    }
                    db.put(("c" + c).getBytes(StandardCharsets.US_ASCII), batch.toByteArray());
                }
            }
        }
        return v.toString();
    }

    private static UTF8String u(String s) {
        return UTF8String.fromString(s);
    }

    @Test
    void rowsAreFoundByKeyWithTheirValuesAndNulls() throws Exception {
        String v1 = store("v1",
            new Object[][] {{"alice", "Alice", 7L, 0.5, true}, {"bob", null, null, null, null}},
            new Object[][] {{"carol", "Carol \u00e9", -3L, 1e300, false}, {"", "empty key", 0L, 0.0, true}});
        int h = LookupTables.handle("test-unique");
        assertEquals(h, LookupTables.handle("test-unique"));
        LookupTables.publish(h, v1, 4, 1024);
        assertEquals(v1, LookupTables.version(h));
        InternalRow a = LookupTables.one(u("alice"), h);
        assertEquals(4, a.numFields());
        assertEquals("Alice", a.getUTF8String(0).toString());
        assertEquals(7L, a.getLong(1));
        assertEquals(0.5, a.getDouble(2));
        assertTrue(a.getBoolean(3));
        InternalRow b = LookupTables.one(u("bob"), h);
        for (int i = 0; i < 4; i++) assertTrue(b.isNullAt(i), "bob's column " + i);
        InternalRow c = LookupTables.one(u("carol"), h);
        assertEquals("Carol \u00e9", c.getUTF8String(0).toString());
        assertEquals(-3L, c.getLong(1));
        assertEquals(1e300, c.getDouble(2));
        assertFalse(c.getBoolean(3));
        assertEquals("empty key", LookupTables.one(u(""), h).getUTF8String(0).toString());
        assertNull(LookupTables.one(u("dave"), h));
        assertNull(LookupTables.one(u("alic"), h));
        assertNull(LookupTables.one(u("alice "), h));
    }

    @Test
    void everyRowOfAKeyInTableOrder() throws Exception {
        String v = store("multi",
            new Object[][] {{"k", "first", 1L, null, null}, {"k", "second", 2L, null, null}, {"j", "other", 3L, null, null}},
            new Object[][] {{"x", "x", 4L, null, null}});
        int h = LookupTables.handle("test-multi");
        LookupTables.publish(h, v, 4, 1024);
        ArrayData all = LookupTables.all(u("k"), h);
        assertEquals(2, all.numElements());
        assertEquals("first", all.getStruct(0, 4).getUTF8String(0).toString());
        assertEquals("second", all.getStruct(1, 4).getUTF8String(0).toString());
        assertEquals(1, LookupTables.all(u("x"), h).numElements());
        assertNull(LookupTables.all(u("y"), h));
    }

    @Test
    void aNewVersionReplacesTheOldAndAStoreMustHoldItsRows() throws Exception {
        int h = LookupTables.handle("test-versions");
        LookupTables.publish(h, store("a", new Object[][] {{"k", "old", 1L, null, null}}), 1, 64);
        LookupTables.publish(h, store("b", new Object[][] {{"k", "new", 2L, null, null}}), 1, 64);
        assertEquals("new", LookupTables.one(u("k"), h).getUTF8String(0).toString());
        IllegalStateException e = assertThrows(IllegalStateException.class,
            () -> LookupTables.publish(h, store("c", new Object[][] {{"k", "x", 1L, null, null}}), 2, 64));
        assertTrue(e.getMessage().contains("holds 1 rows, its meta says 2"), e.getMessage());
        assertEquals("new", LookupTables.one(u("k"), h).getUTF8String(0).toString());  // the failed load left it
        IllegalStateException unknown = assertThrows(IllegalStateException.class,
            () -> LookupTables.one(u("k"), LookupTables.handle("test-never-published")));
        assertTrue(unknown.getMessage().endsWith("was not published in this JVM"), unknown.getMessage());
    }
}
