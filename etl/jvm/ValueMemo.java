package etl.jvm;

import java.util.Arrays;

import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * One field's recent values and what held on each: the predicates {@link RuleMatch} set scanning the value (its
 * needles, patterns, comparisons: all decided by the value's bytes alone). Sysmon's Image, ParentImage, Company,
 * Product, OriginalFileName, User ... repeat from event to event: a value seen again is looked up (a hash and a
 * byte comparison) instead of scanned.
 *
 * <p>Direct-mapped by a hash of the bytes, growing from {@link #FIRST} to {@link #MOST} slots while values
 * evict each other. It watches its hit rate: a field whose values seldom repeat (hashes, ids, most command lines
 * of a busy host) pays a hash and a copy per value for nothing, so below one hit in {@link #WORTH} lookups over
 * a window the memo stops for {@link #PAUSE} values, then tries again.
 */
final class ValueMemo {
    static final int FIRST = 64, MOST = 4096, WINDOW = 4096, WORTH = 8, PAUSE = 1 << 16;
    private static final long MIX = 0x9E3779B97F4A7C15L;
    private static final int[] NONE = new int[0];

    private long[] hashes;
    private byte[][] keys;  // null: empty slot
    private int[][] leaves;
    private int[][] decided;  // per slot: its value's lazy predicates decided so far (predicate << 1 | holds)
    private int lookups, hits, evictions, paused;
    int found = -1;  // the slot of the last miss's value, for put (-1: none)
    int last = -1;  // the slot of the value last looked up (hit) or filed (-1: none)
    private long foundHash;

    ValueMemo() {
        size(FIRST);
    }

    private void size(int n) {
        hashes = new long[n];
        keys = new byte[n][];
        leaves = new int[n][];
        decided = new int[n][];
    }

    /** The predicates held on the value when it was seen, or null (not seen, or the memo is paused: then
     *  {@link #put} is a no-op). */
    int[] get(UTF8String v) {
        found = -1;
        last = -1;
        if (paused > 0) {
            if (--paused == 0) size(FIRST);
            return null;
        }
        if (++lookups == WINDOW) {
            boolean worth = hits * WORTH >= WINDOW;
            lookups = hits = 0;
            if (!worth) {
                paused = PAUSE;
                hashes = null;
                keys = null;
                leaves = null;
                decided = null;
                return null;
            }
        }
        Object base = v.getBaseObject();
        long off = v.getBaseOffset();
        int n = v.numBytes();
        long h = hash(base, off, n);
        int s = (int) (h >>> 32) & (keys.length - 1);
        byte[] k = keys[s];
        if (k != null && hashes[s] == h && k.length == n && same(base, off, k, n)) {
            hits++;
            last = s;
            return leaves[s];
        }
        if (k != null && ++evictions > keys.length && keys.length < MOST) {
            grow();
            s = (int) (h >>> 32) & (keys.length - 1);
        }
        found = s;
        foundHash = h;
        return null;
    }

    /** Files the value of the last {@link #get} that missed with the predicates touched[from, to). */
    void put(UTF8String v, int[] touched, int from, int to) {
        if (found < 0) return;
        hashes[found] = foundHash;
        keys[found] = v.getBytes();
        leaves[found] = from == to ? NONE : Arrays.copyOfRange(touched, from, to);
        decided[found] = null;
        last = found;
        found = -1;
    }

    /** Lazy predicate l on the value in slot s: 1 holds, 0 does not, -1 not decided yet. */
    int decided(int s, int l) {
        int[] d = decided[s];
        if (d == null) return -1;
        for (int j = 1, n = d[0]; j <= n; j++) if (d[j] >>> 1 == l) return d[j] & 1;
        return -1;
    }

    void decide(int s, int l, boolean holds) {
        int[] d = decided[s];
        if (d == null) d = decided[s] = new int[4];
        else if (d[0] + 1 == d.length) d = decided[s] = Arrays.copyOf(d, 2 * d.length);
        d[++d[0]] = l << 1 | (holds ? 1 : 0);
    }

    private void grow() {
        long[] h = hashes;
        byte[][] k = keys;
        int[][] l = leaves, d = decided;
        size(Math.min(MOST, 4 * k.length));
        evictions = 0;
        for (int s = 0; s < k.length; s++) {
            if (k[s] == null) continue;
            int t = (int) (h[s] >>> 32) & (keys.length - 1);
            hashes[t] = h[s];
            keys[t] = k[s];
            leaves[t] = l[s];
            decided[t] = d[s];
        }
    }

    /** Are the n bytes at base + off those of k? */
    private static boolean same(Object base, long off, byte[] k, int n) {
        int i = 0;
        for (; i + 8 <= n; i += 8) {
            if (Platform.getLong(base, off + i) != Platform.getLong(k, Platform.BYTE_ARRAY_OFFSET + i)) return false;
        }
        for (; i < n; i++) if (Platform.getByte(base, off + i) != k[i]) return false;
        return true;
    }

    static long hash(Object base, long off, int n) {
        long h = n * MIX;
        int i = 0;
        for (; i + 8 <= n; i += 8) h = Long.rotateLeft((h ^ Platform.getLong(base, off + i)) * MIX, 29);
        for (; i < n; i++) h = Long.rotateLeft((h ^ Platform.getByte(base, off + i)) * MIX, 29);
        return (h ^ (h >>> 31)) * MIX;
    }
}
