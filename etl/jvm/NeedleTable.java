package etl.jvm;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One field's needles filed under a key (the 3 or 4 bytes at their anchor, a hash of their first or last bytes,
 * their 1 or 2 bytes), in plain arrays: no object per needle or per key, no boxing. A bitset of the keys (about 32
 * bits a key) rules out most lookups; an open-addressed table of the keys gives a slot's range of candidates,
 * each candidate a record of ints (needle id, anchor, flags, its bytes' range in one byte pool, its predicates'
 * range in one int pool), the candidates of a slot next to each other. A slot may also carry an int for its
 * owner (the pattern literals starting with a 3-gram).
 */
final class NeedleTable {
    static final int ID = 0, ANCHOR = 1, FLAGS = 2, TEXT = 3, TEXT_END = 4, LEAVES = 5, LEAVES_END = 6, STRIDE = 7;
    static final int CASELESS = 8;  // FLAGS: the needle's kind (RuleProgram.EQ ... CONTAINS) | CASELESS
    private static final long MIX = 0x9E3779B97F4A7C15L, MIX2 = 0xC2B2AE3D27D4EB4FL;

    private final long[] keys;
    private final int[] slots;  // per slot: first candidate (-1: empty), end, extra (-1: none)
    private final int shift;  // 64 - log2(slots)
    private final long[] bits;
    private final int bitShift;  // 64 - log2(bits)
    final int[] cand;  // STRIDE ints per candidate
    final byte[] text;  // the candidates' bytes (ASCII letters lower-cased when caseless)
    final int[] leaves;  // the candidates' predicates

    /** A needle filed under a key, found where its bytes at `anchor` are. */
    record Filed(RuleProgram.Needle nd, int anchor) {}

    /** Filing: key -> its needles (in order) and key -> its extra. */
    static final class Builder {
        final Map<Long, List<Filed>> needles = new LinkedHashMap<>();
        final Map<Long, Integer> extra = new LinkedHashMap<>();

        void add(long key, RuleProgram.Needle nd) {
            add(key, nd, nd.anchor);
        }

        void add(long key, RuleProgram.Needle nd, int anchor) {
            needles.computeIfAbsent(key, k -> new ArrayList<>()).add(new Filed(nd, anchor));
        }

        boolean isEmpty() {
            return needles.isEmpty() && extra.isEmpty();
        }

        /** The table, or null when nothing was filed. */
        NeedleTable build() {
            return isEmpty() ? null : new NeedleTable(this);
        }
    }

    private NeedleTable(Builder b) {
        List<Long> all = new ArrayList<>(b.needles.keySet());
        for (Long k : b.extra.keySet()) if (!b.needles.containsKey(k)) all.add(k);
        int logCap = Math.max(2, 64 - Long.numberOfLeadingZeros(4L * all.size() - 1));  // load at most 1/4
        int logBits = Math.max(6, 64 - Long.numberOfLeadingZeros(32L * all.size() - 1));
        shift = 64 - logCap;
        bitShift = 64 - logBits;
        keys = new long[1 << logCap];
        slots = new int[3 << logCap];
        Arrays.fill(slots, -1);
        bits = new long[1 << (logBits - 6)];
        int nCand = 0, nText = 0, nLeaves = 0;
        for (List<Filed> l : b.needles.values()) {
            for (Filed fd : l) {
                RuleProgram.Needle nd = fd.nd();
                nCand++;
                nText += nd.text.length;
                nLeaves += nd.leaves.length;
            }
        }
        cand = new int[nCand * STRIDE];
        text = new byte[nText];
        leaves = new int[nLeaves];
        int c = 0, t = 0, lv = 0;
        for (long key : all) {
            int h = (int) ((key * MIX2) >>> bitShift);
            bits[h >>> 6] |= 1L << h;
            int s = (int) ((key * MIX) >>> shift);
            while (slots[3 * s] != -1) s = (s + 1) & (keys.length - 1);
            keys[s] = key;
            slots[3 * s] = c / STRIDE;
            for (Filed fd : b.needles.getOrDefault(key, List.of())) {
                RuleProgram.Needle nd = fd.nd();
                cand[c + ID] = nd.id;
                cand[c + ANCHOR] = Math.max(fd.anchor(), 0);
                cand[c + FLAGS] = nd.kind | (nd.caseless ? CASELESS : 0);
                cand[c + TEXT] = t;
                System.arraycopy(nd.text, 0, text, t, nd.text.length);
                t += nd.text.length;
                cand[c + TEXT_END] = t;
                cand[c + LEAVES] = lv;
                System.arraycopy(nd.leaves, 0, leaves, lv, nd.leaves.length);
                lv += nd.leaves.length;
                cand[c + LEAVES_END] = lv;
                c += STRIDE;
            }
            slots[3 * s + 1] = c / STRIDE;
            slots[3 * s + 2] = b.extra.getOrDefault(key, -1);
        }
    }

    /** The slot filed under the key, or -1 (the bitset first, then the table). */
    int find(long key) {
        int h = (int) ((key * MIX2) >>> bitShift);
        if ((bits[h >>> 6] & (1L << h)) == 0) return -1;
        for (int s = (int) ((key * MIX) >>> shift); slots[3 * s] != -1; s = (s + 1) & (keys.length - 1)) {
            if (keys[s] == key) return s;
        }
        return -1;
    }

    /** Slot s's candidates: from (inclusive) ... */
    int from(int s) {
        return slots[3 * s] * STRIDE;
    }

    /** ... to (exclusive), as offsets into `cand`. */
    int to(int s) {
        return slots[3 * s + 1] * STRIDE;
    }

    int extra(int s) {
        return slots[3 * s + 2];
    }

    /** Are candidate c's bytes at position `pos` of the value's n bytes? */
    boolean at(int c, byte[] b, int n, int pos) {
        int from = cand[c + TEXT], m = cand[c + TEXT_END] - from;
        if (pos < 0 || pos + m > n) return false;
        if ((cand[c + FLAGS] & CASELESS) != 0) {
            for (int j = 0; j < m; j++) {
                byte x = b[pos + j];
                if ((x >= 'A' && x <= 'Z' ? x + 32 : x) != text[from + j]) return false;
            }
        } else {
            for (int j = 0; j < m; j++) if (b[pos + j] != text[from + j]) return false;
        }
        return true;
    }

    /** Does candidate c (equals, starts with, ends with) hold on the value? */
    boolean affix(int c, byte[] b, int n) {
        int m = cand[c + TEXT_END] - cand[c + TEXT];
        switch (cand[c + FLAGS] & ~CASELESS) {
            case RuleProgram.EQ: return n == m && at(c, b, n, 0);
            case RuleProgram.STARTS: return at(c, b, n, 0);
            default: return at(c, b, n, n - m);
        }
    }

    /** The key of the m bytes hashed (h: each byte, ASCII letters lower-cased, folded in as h * 257 + byte). */
    static long affixKey(long h, int m) {
        return h * 31 + m;
    }
}
