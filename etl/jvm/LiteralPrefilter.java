package etl.jvm;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.spark.sql.api.java.UDF2;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;

/** True when the bytes hold a non-ASCII byte or, lower-cased, contain one of the literals of the set file. */
public final class LiteralPrefilter implements UDF2<byte[], byte[], Boolean> {
    private static final long serialVersionUID = 1L;

    private static final Shipped<Grams> SETS = new Shipped<>(16, "prefilter literals", LiteralPrefilter::parse);

    private static final class Last {
        final byte[] name;
        final Grams grams;

        Last(byte[] name, Grams grams) {
            this.name = name;
            this.grams = grams;
        }
    }

    private transient volatile Last last;  // the set of the previous row (one set per call site)

    /** setFile: the set file's name as UTF-8 bytes (a binary literal: Spark hands the same array to every
     *  row of a task, unconverted, so the usual check is one reference comparison). */
    @Override
    public Boolean call(byte[] value, byte[] setFile) {
        if (value == null) {
            return Boolean.FALSE;
        }
        Last l = last;
        if (l == null || (l.name != setFile && !Arrays.equals(l.name, setFile))) {
            l = new Last(setFile, SETS.get(new String(setFile, StandardCharsets.UTF_8)));
            last = l;
        }
        return l.grams.matches(value, value.length);
    }

    private static final PerTask<UTF8String, Scan> SCANS = new PerTask<>();

    /** A task's set and a buffer for the value's bytes. */
    private static final class Scan {
        final Grams grams;
        byte[] buf = new byte[256];

        Scan(UTF8String setFile) {
            grams = SETS.get(setFile.toString());
        }
    }

    /**
     * The same test as {@link #call}, for a static call in generated code: the value's UTF-8 bytes are read in place
     * (copied into a buffer of the task's), without the cast to binary and the UDF's boxing. setFile: a string
     * literal of the plan.
     */
    public static boolean test(UTF8String value, UTF8String setFile) {
        Scan s = SCANS.get(setFile, Scan::new);
        int n = value.numBytes();
        if (n > s.buf.length) s.buf = new byte[Math.max(n, 2 * s.buf.length)];
        Platform.copyMemory(value.getBaseObject(), value.getBaseOffset(), s.buf, Platform.BYTE_ARRAY_OFFSET, n);
        return s.grams.matches(s.buf, n);
    }

    private static Grams parse(List<String> lines) {
        List<byte[][][]> groups = new ArrayList<>();
        for (String line : lines) {
            if (line.isEmpty()) continue;
            String[] needs = line.split(" ");
            byte[][][] group = new byte[needs.length][][];
            for (int k = 0; k < needs.length; k++) group[k] = need(needs[k]);
            groups.add(group);
        }
        return new Grams(groups);
    }

    /** A need as the shipped files write it (its literals hex-encoded, comma-separated): the literals. */
    static byte[][] need(String text) {
        String[] alts = text.split(",");
        byte[][] out = new byte[alts.length][];
        for (int j = 0; j < alts.length; j++) out[j] = unhex(alts[j]);
        return out;
    }

    /** Hex text to bytes (the encoding of the files etl's driver ships). */
    static byte[] unhex(String h) {
        byte[] out = new byte[h.length() / 2];
        for (int i = 0; i < out.length; i++) out[i] = (byte) Integer.parseInt(h.substring(2 * i, 2 * i + 2), 16);
        return out;
    }

    /**
     * Groups of needs (a group: every need holds; a need: the value contains one of its literals). Only a
     * group's first need (its most selective, of literals of 3 characters or more) is searched for in the
     * pass, one bit test per byte: the 4 characters ending at the byte, hashed into a bitset (`near`: about 64
     * bits per entry, from 2^16 to 2^20 bits, so it stays in the L1/L2 caches) holding the first 4 characters
     * of every literal -- and, for a 3-character literal, the 128 4-grams it starts (its end of value is checked
     * apart). Text shares far fewer 4-grams than 3-grams with a set of literals: at 10,000 rules a 3-gram table
     * was hit at 14 % of the bytes, this one at about 2 %. Only on a hit are the exact tables read: 3-character
     * literals in a bitset of 3-grams (2^21 bits), longer ones in a bitset of their first 4 characters, hashed
     * (2^20 bits), compared on a hit. A hit on a literal that alone makes a group hold ends the pass; a hit on
     * another group's first need checks that group's other needs by a direct search of the value (rare: the
     * first need is the selective one). With more than MAX_ENUMERATED 3-character literals, they are found
     * through a 3-gram table of their own instead (one more bit test per byte).
     */
    static final class Grams {
        private static final int HASH_BITS = 20;
        private static final int MAX_ENUMERATED = 64;
        private final long[] near;
        private final int nearShift;
        private final long[] near3 = new long[1 << 9];  // 2^15 bits: 3-character literals, when not enumerated
        private final boolean has3;  // some literal has 3 characters
        private final boolean scan3;  // ... and they are found through near3
        private final long[] three = new long[1 << 15];
        private final long[] four = new long[1 << (HASH_BITS - 6)];
        private final Map<Integer, Integer> threeIds = new HashMap<>();
        private final Map<Integer, byte[][]> heads = new HashMap<>();
        private final Map<Integer, int[]> headIds = new HashMap<>();
        private final int[][] anchors;  // first-need literal id -> the groups whose first need it is in
        private final boolean[] alone;  // first-need literal id -> makes a group hold by itself
        private final byte[][][][] rest;  // group -> its other needs -> their literals (lower case)

        Grams(List<byte[][][]> groups) {
            Map<String, Integer> ids = new HashMap<>();
            Map<Integer, List<byte[]>> byHead = new HashMap<>();
            Map<Integer, List<Integer>> byHeadIds = new HashMap<>();
            List<List<Integer>> members = new ArrayList<>();
            List<Boolean> single = new ArrayList<>();
            List<byte[]> longer = new ArrayList<>();
            List<byte[]> short3 = new ArrayList<>();
            rest = new byte[groups.size()][][][];
            for (int g = 0; g < groups.size(); g++) {
                byte[][][] needs = groups.get(g);
                rest[g] = new byte[needs.length - 1][][];
                for (int k = 1; k < needs.length; k++) {
                    rest[g][k - 1] = new byte[needs[k].length][];
                    for (int j = 0; j < needs[k].length; j++) rest[g][k - 1][j] = lowered(needs[k][j], 1);
                }
                for (byte[] raw : needs[0]) {
                    byte[] lit = lowered(raw, 3);
                    String key = new String(lit, StandardCharsets.ISO_8859_1);
                    Integer id = ids.get(key);
                    if (id == null) {
                        id = ids.size();
                        ids.put(key, id);
                        members.add(new ArrayList<>());
                        single.add(Boolean.FALSE);
                        if (lit.length == 3) {
                            int t = (lit[0] << 14) | (lit[1] << 7) | lit[2];
                            three[t >>> 6] |= 1L << (t & 63);
                            threeIds.put(t, id);
                            short3.add(lit);
                        } else {
                            int h = hash((lit[0] << 24) | (lit[1] << 16) | (lit[2] << 8) | lit[3]);
                            four[h >>> 6] |= 1L << (h & 63);
                            byHead.computeIfAbsent(h, x -> new ArrayList<>()).add(lit);
                            byHeadIds.computeIfAbsent(h, x -> new ArrayList<>()).add(id);
                            longer.add(lit);
                        }
                    }
                    members.get(id).add(g);
                    if (needs.length == 1) single.set(id, Boolean.TRUE);
                }
            }
            has3 = !short3.isEmpty();
            scan3 = short3.size() > MAX_ENUMERATED;
            int entries = longer.size() + (scan3 ? 0 : 128 * short3.size());
            int bits = 16;
            while (bits < 20 && (1L << bits) < 64L * entries) bits++;
            near = new long[1 << (bits - 6)];
            nearShift = 32 - bits;
            for (byte[] lit : longer) setNear(gram(lit[0], lit[1], lit[2], lit[3]));
            for (byte[] lit : short3) {
                if (scan3) {
                    int k3 = near3(lit[0] << 14 | lit[1] << 7 | lit[2]);
                    near3[k3 >>> 6] |= 1L << k3;
                } else {
                    for (int x = 0; x < 128; x++) setNear(gram(lit[0], lit[1], lit[2], x));
                }
            }
            for (Map.Entry<Integer, List<byte[]>> e : byHead.entrySet()) {
                heads.put(e.getKey(), e.getValue().toArray(new byte[0][]));
                headIds.put(e.getKey(), byHeadIds.get(e.getKey()).stream().mapToInt(Integer::intValue).toArray());
            }
            anchors = new int[members.size()][];
            alone = new boolean[members.size()];
            for (int id = 0; id < anchors.length; id++) {
                anchors[id] = members.get(id).stream().mapToInt(Integer::intValue).toArray();
                alone[id] = single.get(id);
            }
        }

        private static int gram(int a, int b, int c, int d) {
            return (a << 21) | (b << 14) | (c << 7) | d;
        }

        private void setNear(int w) {
            int k = (w * 0x9E3779B1) >>> nearShift;
            near[k >>> 6] |= 1L << k;
        }

        private static int near3(int t) {
            return (t * 0x9E3779B1) >>> 17;
        }

        private static byte[] lowered(byte[] raw, int min) {
            if (raw.length < min) throw new IllegalArgumentException("etl: prefilter literal shorter than " + min);
            byte[] lit = new byte[raw.length];
            for (int i = 0; i < raw.length; i++) lit[i] = (byte) lower(raw[i]);
            return lit;
        }

        private static int lower(byte b) {
            return (b >= 'A' && b <= 'Z') ? b + 32 : b;
        }

        private static int hash(int g) {
            return (g * 0x9E3779B1) >>> (32 - HASH_BITS);
        }

        static final byte[] LOW = new byte[128];  // ASCII lower-casing, without a branch per byte

        static {
            for (int c = 0; c < 128; c++) LOW[c] = (byte) ((c >= 'A' && c <= 'Z') ? c + 32 : c);
        }

        boolean matches(byte[] v, int n) {
            final long[] nr = near;
            final int shift = nearShift;
            int w = 0;  // the last 4 characters, lower-cased, 7 bits each (kept up to date, not rebuilt)
            for (int i = 0; i < n; i++) {
                int b = v[i];
                if (b < 0) return true;  // non-ASCII: the matcher decides
                w = ((w << 7) | LOW[b]) & 0xFFFFFFF;
                int k = (w * 0x9E3779B1) >>> shift;
                if ((nr[k >>> 6] & (1L << k)) != 0 && i >= 3 && at(v, n, i, w)) return true;
                if (scan3 && i >= 2) {
                    int t = w & 0x1FFFFF;
                    int k3 = near3(t);
                    if ((near3[k3 >>> 6] & (1L << k3)) != 0 && threeAt(v, n, t)) return true;
                }
            }
            if (has3 && !scan3 && n >= 3) {  // a 3-character literal ending the value starts no 4-gram
                return threeAt(v, n, w & 0x1FFFFF);
            }
            return false;
        }

        /** A hit of the 4 characters ending at byte i (w): a literal starting at i - 3? */
        private boolean at(byte[] v, int n, int i, int w) {
            if (has3 && !scan3 && threeAt(v, n, w >>> 7)) return true;
            int h = hash(((w >>> 21) << 24) | (((w >>> 14) & 0x7f) << 16) | (((w >>> 7) & 0x7f) << 8) | (w & 0x7f));
            if ((four[h >>> 6] & (1L << (h & 63))) != 0) {
                byte[][] lits = heads.get(h);
                int[] lids = headIds.get(h);
                for (int j = 0; j < lits.length; j++) {
                    if (equalAt(v, n, i - 3, lits[j]) && hit(v, n, lids[j])) return true;
                }
            }
            return false;
        }

        /** The 3 characters t: a 3-character literal? */
        private boolean threeAt(byte[] v, int n, int t) {
            return (three[t >>> 6] & (1L << (t & 63))) != 0 && hit(v, n, threeIds.get(t));
        }

        /** A first-need literal was found in v: does one of the groups it anchors hold? */
        private boolean hit(byte[] v, int n, int id) {
            if (alone[id]) return true;
            for (int grp : anchors[id]) {
                if (holds(v, n, rest[grp])) return true;
            }
            return false;
        }

        /** Does v hold, lower-cased, one literal (lower case) of each need? Also used by RuleMatch. */
        static boolean holds(byte[] v, int n, byte[][][] needs) {
            for (byte[][] need : needs) {
                boolean any = false;
                for (byte[] lit : need) {
                    if (indexOf(v, n, lit)) {
                        any = true;
                        break;
                    }
                }
                if (!any) return false;
            }
            return true;
        }

        private static boolean indexOf(byte[] v, int n, byte[] lit) {
            for (int s = 0; s + lit.length <= n; s++) {
                if (lower(v[s]) == lit[0] && equalAt(v, n, s, lit)) return true;
            }
            return false;
        }

        static boolean equalAt(byte[] v, int n, int start, byte[] lit) {
            if (start + lit.length > n) return false;
            for (int k = lit.length - 1; k >= 0; k--) {
                if (lower(v[start + k]) != lit[k]) return false;
            }
            return true;
        }
    }
}
