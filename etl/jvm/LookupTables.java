package etl.jvm;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.math.BigDecimal;
import java.nio.channels.Channels;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BaseFixedWidthVector;
import org.apache.arrow.vector.BaseLargeVariableWidthVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorLoader;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ReadChannel;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.arrow.vector.types.DateUnit;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;

/**
 * Dimension tables of lookup joins, held in the JVM (one copy per executor JVM, shared by every task).
 *
 * <p>A table is a store built by etl.compile.lookups.store (a rocksdict store on local disk: Arrow record
 * batches of about 4,096 rows ordered by a 64-bit hash of their key). {@link #publish} reads every chunk once
 * and keeps the rows in flat arrays: the keys' bytes, their hashes in store order with an index on the hash's
 * top bits, and one array per value column. A lookup hashes the event's key (the same function as
 * etl/compile/keyhash.py), walks the few rows of its hash bucket and compares the key bytes (a hash collision
 * never matches); a match is a row object reading the table's arrays in place.
 *
 * <p>Tables are reached by handle (a small int the driver assigns per lookup and plans as a literal). Publishing
 * a new version loads it first and swaps it in after: tasks running meanwhile keep the previous one.
 */
public final class LookupTables {
    private static final Object LOCK = new Object();
    private static final Map<String, Integer> HANDLES = new HashMap<>();
    private static volatile Table[] tables = new Table[0];

    private LookupTables() {
    }

    /** The handle of the table known as `name` (the same name, the same handle, for the JVM's lifetime). */
    public static int handle(String name) {
        synchronized (LOCK) {
            Integer h = HANDLES.get(name);
            if (h == null) {
                h = HANDLES.size();
                HANDLES.put(name, h);
                Table[] grown = new Table[h + 1];
                System.arraycopy(tables, 0, grown, 0, tables.length);
                tables = grown;
            }
            return h;
        }
    }

    /**
     * Loads the store at `versionDir` (its db/ and schema.arrow) and makes it the table of `handle`.
     * Throws when the JVM has not room for it (rawBytes: the store's Arrow size, recorded when it was built),
     * before reading anything.
     */
    public static void publish(int handle, String versionDir, long rows, long rawBytes) throws Exception {
        Runtime rt = Runtime.getRuntime();
        long need = rawBytes + rows * 24L;  // the columns as they are, plus hashes, offsets and the index
        long free = rt.maxMemory() - (rt.totalMemory() - rt.freeMemory());
        if (need > free / 2) {
            throw new IllegalStateException("etl: lookup table " + versionDir + " needs about " + (need >> 20)
                    + " MB of JVM heap and " + (free >> 20) + " MB are free (raise spark.driver.memory)");
        }
        Table t = Table.load(versionDir, (int) rows);
        synchronized (LOCK) {
            Table[] next = tables.clone();
            next[handle] = t;
            tables = next;
        }
    }

    /** The version folder the table of `handle` was loaded from, or null (tests, explain). */
    public static String version(int handle) {
        Table[] ts = tables;
        return handle < ts.length && ts[handle] != null ? ts[handle].source : null;
    }

    /** Forget every table (tests). */
    public static void clear() {
        synchronized (LOCK) {
            tables = new Table[tables.length];
        }
    }

    private static Table table(int handle) {
        Table t = tables[handle];
        if (t == null) {
            throw new IllegalStateException("etl: lookup table " + handle + " was not published in this JVM");
        }
        return t;
    }

    /** The row of `key` (a table whose keys are unique), or null. */
    public static InternalRow one(UTF8String key, int handle) {
        Table t = table(handle);
        long h = hash(key.getBaseObject(), key.getBaseOffset(), key.numBytes());
        int s = t.find(h, key, t.home(h));
        return s < 0 ? null : new TableRow(t, Table.address(t.slots[s]));
    }

    /** Every row of `key` in table order (null when none). */
    public static ArrayData all(UTF8String key, int handle) {
        Table t = table(handle);
        long h = hash(key.getBaseObject(), key.getBaseOffset(), key.numBytes());
        int s = t.find(h, key, t.home(h));
        if (s < 0) {
            return null;
        }
        List<Object> rows = new ArrayList<>(2);
        while (s >= 0) {
            rows.add(new TableRow(t, Table.address(t.slots[s])));
            s = t.find(h, key, (s + 1) & t.mask);
        }
        return new GenericArrayData(rows.toArray());
    }

    /** The hash of a key's bytes (tests compare it with etl/compile/keyhash.py). */
    public static long keyHash(byte[] key) {
        return hash(key, Platform.BYTE_ARRAY_OFFSET, key.length);
    }

    /** etl/compile/keyhash.py: 8 bytes at a time (little endian, the last word zero-padded), fmix64. */
    static long hash(Object base, long off, int len) {
        final long k = 0x9E3779B97F4A7C15L;
        long h = len * k;
        for (int w = 0; w < len; w += 8) {
            long word = 0;
            int n = Math.min(8, len - w);
            for (int i = n - 1; i >= 0; i--) {
                word = (word << 8) | (Platform.getByte(base, off + w + i) & 0xFF);
            }
            long x = (h ^ word) * k;
            h = x ^ (x >>> 29);
        }
        h ^= h >>> 33;
        h *= 0xFF51AFD7ED558CCDL;
        h ^= h >>> 33;
        h *= 0xC4CEB9FE1A85EC53L;
        h ^= h >>> 33;
        return h;
    }

    /**
     * One loaded version of a table: its rows as records in byte pages, found through an open-addressing
     * table of slots. A slot is one long: the key hash's high 32 bits and the record's address / 8 (+1; 0 is an
     * empty slot), so a lookup usually reads one slot and one record: two cache lines.
     *
     * <p>A record (8-byte aligned): the key's length (varint) and bytes, a null bitmap of the value columns, the
     * fixed-width values at fixed places, then the text values (varint length + bytes) in column order.
     */
    static final class Table {
        static final int PAGE_BITS = 30;  // records never cross a 1 GB page
        final String source;
        final int rows;
        final long[] slots;
        final int mask;
        final byte[][] pages;
        final Layout layout;

        private Table(String source, int rows, long[] slots, byte[][] pages, Layout layout) {
            this.source = source;
            this.rows = rows;
            this.slots = slots;
            this.mask = slots.length - 1;
            this.pages = pages;
            this.layout = layout;
        }

        /** The first slot at or after `from` (in probe order from the hash's home) holding `key`, or -1. */
        int find(long h, UTF8String key, int from) {
            int tag = (int) (h >>> 32);
            for (int i = from; ; i = (i + 1) & mask) {
                long s = slots[i];
                if (s == 0) return -1;
                if ((int) (s >>> 32) == tag && sameKey(address(s), key.getBaseObject(), key.getBaseOffset(),
                                                       key.numBytes())) {
                    return i;
                }
            }
        }

        int home(long h) {
            return (int) h & mask;
        }

        static long address(long slot) {
            return ((slot & 0xFFFFFFFFL) - 1) << 3;
        }

        /** The unsigned LEB128 varint at `at` of `page`: its value shifted left by 3, or'ed with its length in bytes. */
        static long varint(byte[] page, long at) {
            int n = 0, shift = 0, b, len = 0;
            do {
                b = Platform.getByte(page, at + len++);
                n |= (b & 0x7F) << shift;
                shift += 7;
            } while (b < 0);
            return ((long) n << 3) | len;
        }

        private boolean sameKey(long addr, Object base, long off, int len) {
            byte[] page = pages[(int) (addr >>> PAGE_BITS)];
            long at = Platform.BYTE_ARRAY_OFFSET + (addr & ((1L << PAGE_BITS) - 1));
            long v = varint(page, at);
            int n = (int) (v >>> 3);
            at += v & 7;
            if (n != len) return false;
            int i = 0;
            for (; i + 8 <= len; i += 8) {
                if (Platform.getLong(page, at + i) != Platform.getLong(base, off + i)) return false;
            }
            for (; i < len; i++) {
                if (Platform.getByte(page, at + i) != Platform.getByte(base, off + i)) return false;
            }
            return true;
        }

        static Table load(String dir, int expectRows) throws IOException, RocksDBException {
            Schema schema;
            try (ReadChannel ch = channel(Files.readAllBytes(Paths.get(dir, "schema.arrow")))) {
                schema = MessageSerializer.deserializeSchema(ch);
            }
            List<Field> fields = schema.getFields();
            int[] kinds = new int[fields.size() - 1];
            int[] scales = new int[kinds.length];
            int[] precisions = new int[kinds.length];
            for (int c = 1; c < fields.size(); c++) {
                ArrowType t = fields.get(c).getType();
                kinds[c - 1] = kindOf(t);
                if (t instanceof ArrowType.Decimal) {
                    scales[c - 1] = ((ArrowType.Decimal) t).getScale();
                    precisions[c - 1] = ((ArrowType.Decimal) t).getPrecision();
                }
            }
            Layout layout = new Layout(kinds, precisions, scales);
            Writer w = new Writer(layout, expectRows);
            RocksDB.loadLibrary();
            try (BufferAllocator alloc = new RootAllocator();
                 VectorSchemaRoot root = VectorSchemaRoot.create(schema, alloc);
                 Options opt = new Options();
                 RocksDB db = RocksDB.openReadOnly(opt, Paths.get(dir, "db").toString());
                 RocksIterator it = db.newIterator()) {
                VectorLoader loader = new VectorLoader(root);
                for (it.seek(new byte[] {'c'}); it.isValid() && it.key()[0] == 'c'; it.next()) {
                    try (ReadChannel ch = channel(it.value());
                         ArrowRecordBatch rb = MessageSerializer.deserializeRecordBatch(ch, alloc)) {
                        loader.load(rb);
                        w.append(root);
                    }
                }
                it.status();
            }
            if (w.rows != expectRows) {
                throw new IllegalStateException("etl: lookup store " + dir + " holds " + w.rows + " rows, its meta says "
                        + expectRows);
            }
            return w.finish(dir);
        }

        private static ReadChannel channel(byte[] bytes) {
            return new ReadChannel(Channels.newChannel(new ByteArrayInputStream(bytes)));
        }
    }

    static final int STRING = 0, LONG = 1, INT = 2, SHORT = 3, BYTE = 4, DOUBLE = 5, FLOAT = 6, BOOL = 7, DECIMAL = 8;

    static int kindOf(ArrowType t) {
        switch (t.getTypeID()) {
            case Utf8: case LargeUtf8: return STRING;
            case Int: {
                ArrowType.Int i = (ArrowType.Int) t;
                if (!i.getIsSigned()) break;
                return i.getBitWidth() == 64 ? LONG : i.getBitWidth() == 32 ? INT : i.getBitWidth() == 16 ? SHORT : BYTE;
            }
            case FloatingPoint:
                return ((ArrowType.FloatingPoint) t).getPrecision() == FloatingPointPrecision.DOUBLE ? DOUBLE : FLOAT;
            case Bool: return BOOL;
            case Date:
                if (((ArrowType.Date) t).getUnit() == DateUnit.DAY) return INT;
                break;
            case Timestamp:
                if (((ArrowType.Timestamp) t).getUnit() == TimeUnit.MICROSECOND) return LONG;
                break;
            case Decimal:
                if (((ArrowType.Decimal) t).getBitWidth() == 128) return DECIMAL;
                break;
            default:
                break;
        }
        throw new UnsupportedOperationException("etl: a lookup column of type " + t + " cannot be held in the JVM");
    }

    /** Where a record's values are: fixed-width ones at `at[c]` after the null bitmap, text ones after those. */
    static final class Layout {
        final int[] kinds;
        final int[] precisions;  // of decimals
        final int[] scales;
        final int[] at;  // fixed-width: offset from the bitmap's start; text and decimals: their rank among them
        final int nullBytes;
        final int fixedEnd;  // offset (from the bitmap's start) of the first variable-length value

        Layout(int[] kinds, int[] precisions, int[] scales) {
            this.kinds = kinds;
            this.precisions = precisions;
            this.scales = scales;
            this.at = new int[kinds.length];
            nullBytes = (kinds.length + 7) / 8;
            int pos = nullBytes, rank = 0;
            for (int c = 0; c < kinds.length; c++) {
                int w = width(kinds[c]);
                if (w == 0) {
                    at[c] = rank++;
                } else {
                    at[c] = pos;
                    pos += w;
                }
            }
            fixedEnd = pos;
        }

        static int width(int kind) {
            switch (kind) {
                case LONG: case DOUBLE: return 8;
                case INT: case FLOAT: return 4;
                case SHORT: return 2;
                case BYTE: case BOOL: return 1;
                default: return 0;  // STRING, DECIMAL: varint length + bytes
            }
        }
    }

    /** Builds a table from Arrow batches in store order. */
    static final class Writer {
        final Layout layout;
        final List<byte[]> pages = new ArrayList<>();
        final long[] hashes;  // per row, to fill the slots at the end
        final long[] addrs;
        byte[] page;
        int pos;
        int rows;

        Writer(Layout layout, int expectRows) {
            this.layout = layout;
            hashes = new long[expectRows];
            addrs = new long[expectRows];
        }

        void append(VectorSchemaRoot root) {
            int n = root.getRowCount();
            FieldVector key = root.getVector(0);
            int[] kinds = layout.kinds;
            FieldVector[] cols = new FieldVector[kinds.length];
            for (int c = 0; c < kinds.length; c++) cols[c] = root.getVector(c + 1);
            byte[][] text = new byte[kinds.length][];
            for (int i = 0; i < n; i++) {
                if (rows >= hashes.length) throw new IllegalStateException("etl: lookup store has more rows than its meta");
                byte[] k = bytesOf(key, i);
                int size = varintSize(k.length) + k.length + layout.fixedEnd;
                for (int c = 0; c < kinds.length; c++) {
                    if (Layout.width(kinds[c]) == 0) {
                        text[c] = cols[c].isNull(i) ? new byte[0]
                                : kinds[c] == STRING ? bytesOf(cols[c], i)
                                : ((DecimalVector) cols[c]).getObject(i).unscaledValue().toByteArray();
                        size += varintSize(text[c].length) + text[c].length;
                    }
                }
                long addr = reserve(size);
                byte[] pg = page;
                long at = Platform.BYTE_ARRAY_OFFSET + (addr & ((1L << Table.PAGE_BITS) - 1));
                at = putVarint(pg, at, k.length);
                Platform.copyMemory(k, Platform.BYTE_ARRAY_OFFSET, pg, at, k.length);
                at += k.length;
                long bitmap = at;
                for (int c = 0; c < kinds.length; c++) {
                    FieldVector v = cols[c];
                    if (v.isNull(i)) {
                        pg[(int) (bitmap - Platform.BYTE_ARRAY_OFFSET) + (c >>> 3)] |= (byte) (1 << (c & 7));
                        continue;
                    }
                    long p = bitmap + layout.at[c];
                    switch (kinds[c]) {
                        case LONG: case DOUBLE:
                            Platform.putLong(pg, p, ((BaseFixedWidthVector) v).getDataBuffer().getLong((long) i * 8));
                            break;
                        case INT: case FLOAT:
                            Platform.putInt(pg, p, ((BaseFixedWidthVector) v).getDataBuffer().getInt((long) i * 4));
                            break;
                        case SHORT:
                            Platform.putShort(pg, p, ((BaseFixedWidthVector) v).getDataBuffer().getShort((long) i * 2));
                            break;
                        case BYTE:
                            Platform.putByte(pg, p, ((BaseFixedWidthVector) v).getDataBuffer().getByte(i));
                            break;
                        case BOOL:
                            Platform.putByte(pg, p, (byte) ((BitVector) v).get(i));
                            break;
                        default:
                            break;
                    }
                }
                at = bitmap + layout.fixedEnd;
                for (int c = 0; c < kinds.length; c++) {
                    if (text[c] == null) continue;
                    at = putVarint(pg, at, text[c].length);
                    Platform.copyMemory(text[c], Platform.BYTE_ARRAY_OFFSET, pg, at, text[c].length);
                    at += text[c].length;
                    text[c] = null;
                }
                hashes[rows] = hash(k, Platform.BYTE_ARRAY_OFFSET, k.length);
                addrs[rows] = addr;
                rows++;
            }
        }

        /** The address of `size` free bytes, 8-byte aligned (a new page when this one is full). */
        private long reserve(int size) {
            int aligned = (size + 7) & ~7;
            if (page == null || pos + aligned > page.length) {
                if (page != null) pages.set(pages.size() - 1, java.util.Arrays.copyOf(page, pos));
                long left = (long) (hashes.length - rows) * aligned;  // the rest, guessed at this record's size
                int cap = (int) Math.min(1L << Table.PAGE_BITS, Math.max(left + (left >> 2), 1 << 16));
                page = new byte[Math.max(cap, aligned)];
                pages.add(page);
                pos = 0;
            }
            long addr = ((long) (pages.size() - 1) << Table.PAGE_BITS) | pos;
            pos += aligned;
            return addr;
        }

        Table finish(String dir) {
            if (page != null && pos < page.length) pages.set(pages.size() - 1, java.util.Arrays.copyOf(page, pos));
            int cap = 1;
            while (cap < rows + (rows >> 1) + 1) cap <<= 1;  // load factor at most 2/3
            long[] slots = new long[cap];
            int mask = cap - 1;
            for (int r = 0; r < rows; r++) {
                long s = (hashes[r] & 0xFFFFFFFF00000000L) | ((addrs[r] >>> 3) + 1);
                int i = (int) hashes[r] & mask;
                while (slots[i] != 0) i = (i + 1) & mask;
                slots[i] = s;
            }
            return new Table(dir, rows, slots, pages.toArray(new byte[0][]), layout);
        }

        private static byte[] bytesOf(FieldVector v, int i) {
            if (v.isNull(i)) return new byte[0];
            ArrowBuf offs = v.getOffsetBuffer();
            long s, e;
            if (v instanceof BaseLargeVariableWidthVector) {
                s = offs.getLong((long) i * 8);
                e = offs.getLong((long) (i + 1) * 8);
            } else {
                s = offs.getInt((long) i * 4);
                e = offs.getInt((long) (i + 1) * 4);
            }
            byte[] out = new byte[(int) (e - s)];
            v.getDataBuffer().getBytes(s, out, 0, out.length);
            return out;
        }
    }

    static int varintSize(int n) {
        int s = 1;
        while ((n >>>= 7) != 0) s++;
        return s;
    }

    static long putVarint(byte[] page, long at, int n) {
        while ((n & ~0x7F) != 0) {
            Platform.putByte(page, at++, (byte) ((n & 0x7F) | 0x80));
            n >>>= 7;
        }
        Platform.putByte(page, at++, (byte) n);
        return at;
    }

    /** A matched row: reads its record in place (text values are views of the page, nothing is boxed). */
    static final class TableRow extends GenericInternalRow {
        private static final long serialVersionUID = 1L;

        private final Table t;
        private final byte[] page;
        private final long bitmap;  // absolute (Platform) offset of the record's null bitmap in `page`

        TableRow(Table t, long addr) {
            super(new Object[0]);
            this.t = t;
            this.page = t.pages[(int) (addr >>> Table.PAGE_BITS)];
            long at = Platform.BYTE_ARRAY_OFFSET + (addr & ((1L << Table.PAGE_BITS) - 1));
            long v = Table.varint(page, at);
            this.bitmap = at + (v & 7) + (v >>> 3);  // past the key
        }

        @Override public int numFields() { return t.layout.kinds.length; }

        @Override
        public boolean isNullAt(int i) {
            return (Platform.getByte(page, bitmap + (i >>> 3)) & (1 << (i & 7))) != 0;
        }

        /** Absolute offset of variable-length value `i`: its varint length first. */
        private long varStart(int i) {
            long at = bitmap + t.layout.fixedEnd;
            for (int rank = t.layout.at[i]; rank > 0; rank--) {
                long v = Table.varint(page, at);
                at += (v & 7) + (v >>> 3);
            }
            return at;
        }

        @Override
        public UTF8String getUTF8String(int i) {
            if (isNullAt(i)) return null;
            long at = varStart(i);
            long v = Table.varint(page, at);
            return UTF8String.fromAddress(page, at + (v & 7), (int) (v >>> 3));
        }

        @Override
        public Decimal getDecimal(int i, int precision, int scale) {
            if (isNullAt(i)) return null;
            long at = varStart(i);
            long v = Table.varint(page, at);
            byte[] raw = new byte[(int) (v >>> 3)];
            Platform.copyMemory(page, at + (v & 7), raw, Platform.BYTE_ARRAY_OFFSET, raw.length);
            return Decimal.apply(new BigDecimal(new java.math.BigInteger(raw), scale), precision, scale);
        }

        @Override public long getLong(int i) { return Platform.getLong(page, bitmap + t.layout.at[i]); }
        @Override public double getDouble(int i) { return Platform.getDouble(page, bitmap + t.layout.at[i]); }
        @Override public int getInt(int i) { return Platform.getInt(page, bitmap + t.layout.at[i]); }
        @Override public float getFloat(int i) { return Platform.getFloat(page, bitmap + t.layout.at[i]); }
        @Override public short getShort(int i) { return Platform.getShort(page, bitmap + t.layout.at[i]); }
        @Override public byte getByte(int i) { return Platform.getByte(page, bitmap + t.layout.at[i]); }
        @Override public boolean getBoolean(int i) { return Platform.getByte(page, bitmap + t.layout.at[i]) != 0; }

        @Override
        public Object genericGet(int i) {
            if (isNullAt(i)) return null;
            switch (t.layout.kinds[i]) {
                case STRING: return getUTF8String(i).copy();
                case LONG: return getLong(i);
                case INT: return getInt(i);
                case SHORT: return getShort(i);
                case BYTE: return getByte(i);
                case DOUBLE: return getDouble(i);
                case FLOAT: return getFloat(i);
                case BOOL: return getBoolean(i);
                default: return getDecimal(i, t.layout.precisions[i], t.layout.scales[i]);
            }
        }

        @Override
        public GenericInternalRow copy() {
            Object[] v = new Object[numFields()];
            for (int i = 0; i < v.length; i++) v[i] = genericGet(i);
            return new GenericInternalRow(v);
        }

        @Override public String toString() { return copy().toString(); }
        @Override public boolean equals(Object o) { return copy().equals(o); }
        @Override public int hashCode() { return copy().hashCode(); }
    }
}
