package etl.jvm;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import org.apache.spark.unsafe.Platform;

/**
 * The matcher program of etl/grokvm (format and semantics: etl/grokvm/codec.py and etl/grokvm/runtime.py,
 * whose walk this is, node for node): first-match DFAs for the capture-free pieces of a grok pattern and a
 * tree that walks them left to right, never backtracking. {@link #run} gives the spans of every group for an
 * ASCII line -- exactly those of a backtracking engine's leftmost match -- or says it is not sure (the
 * caller then runs the regex).
 */
final class GrokProgram {
    private static final int NOMATCH = -1;  // the node cannot match here (it set no group)
    private static final int FALLBACK = -2;  // the walk committed and failed: only the regex can tell
    // Probes and SCAN may read the rest of a line again at each decision; on a pathological line that is
    // quadratic. Past this many DFA bytes per line byte the walk is not sure (the regex answers): a well-formed
    // access-log line reads about 3 per byte.
    static final long BUDGET_PER_BYTE = 64;
    static final long BUDGET_BASE = 4096;
    // a DFA state that loops on itself over at least this many of the 128 bytes is skipped through (ByteSet)
    static final int LOOP_MIN = 8;

    final int groups;
    private final Node root;
    private final ByteSet sure;  // null, or the bytes a line may hold: on the others (where Python's and Java's
                                 // readings may differ) the walk is not sure

    private GrokProgram(int groups, Node root, long fallbackLo, long fallbackHi) {
        this.groups = groups;
        this.root = root;
        this.sure = (fallbackLo | fallbackHi) == 0 ? null : new ByteSet(~fallbackLo, ~fallbackHi);
    }

    /**
     * Spans of groups 1..groups of the line's match into spans (spans[2g], spans[2g + 1]; -1 when the group did
     * not take part); false when not sure. The line must be ASCII.
     */
    boolean run(Object base, long off, int n, int[] spans) {
        return walk(base, off, n, spans) >= 0;
    }

    /** The root's answer: the match's end, or NOMATCH / FALLBACK (not sure). */
    private int walk(Object base, long off, int n, int[] spans) {
        if (n == 0) return FALLBACK;
        if (sure != null && sure.skip(base, off, 0, n) < n) return FALLBACK;
        Arrays.fill(spans, -1);
        Line s = new Line(base, off, n, spans);
        int r = root.eval(s, 0);
        return s.budget < 0 ? FALLBACK : r;
    }

    /** The line being walked, the spans found so far, and the DFA bytes the walk may still read. */
    static final class Line {
        final Object base;
        final long off;
        final int n;
        final int[] spans;
        long budget;  // the walk reads at most BUDGET_PER_BYTE * n + BUDGET_BASE bytes in DFAs, then gives up

        Line(Object base, long off, int n, int[] spans) {
            this.base = base;
            this.off = off;
            this.n = n;
            this.spans = spans;
            this.budget = BUDGET_PER_BYTE * (long) n + BUDGET_BASE;
        }

        int at(int i) {
            return Platform.getByte(base, off + i);
        }

        void span(int group, int a, int z) {
            spans[2 * group] = a;
            spans[2 * group + 1] = z;
        }
    }

    /** A first-match DFA; entries are (target * nclasses) * 2 + "a match ended before this byte". */
    static final class Dfa {
        final int nclasses;
        final int startCtx;
        final byte[] classmap = new byte[128];
        final byte[] prevmap = new byte[128];
        final int[] start;
        final int[] trans;  // (target * nclasses) << 2 | "target has a loop" << 1 | flag
        final byte[] eof;
        final ByteSet[] loops;  // per state: null, or the bytes it loops on (the inside of \S+, [^"]+ ...)
        final boolean[] loopFlag;  // the loop's transitions say "a match ended before this byte"

        Dfa(ByteBuffer b) {
            int nstates = b.getInt();
            nclasses = b.getShort() & 0xFFFF;
            int nctx = b.get() & 0xFF;
            startCtx = b.get() & 0xFF;
            int ew = b.get() & 0xFF;
            if (nstates < 1 || nclasses < 1 || nclasses > 128 || nctx < 1 || startCtx >= nctx || (ew != 2 && ew != 4)) {
                throw new IllegalArgumentException("etl: bad grok DFA header");
            }
            b.get(classmap);
            b.get(prevmap);
            for (int i = 0; i < 128; i++) {
                if ((classmap[i] & 0xFF) >= nclasses || (prevmap[i] & 0xFF) >= nctx) {
                    throw new IllegalArgumentException("etl: bad grok DFA maps");
                }
            }
            start = new int[nctx];
            for (int c = 0; c < nctx; c++) start[c] = checked(b.getInt(), nstates) * nclasses;
            int[] raw = new int[nstates * nclasses];  // target << 1 | flag
            for (int k = 0; k < raw.length; k++) {
                long e = ew == 2 ? (b.getShort() & 0xFFFFL) : (b.getInt() & 0xFFFFFFFFL);
                raw[k] = (checked((int) (e >>> 1), nstates) << 1) | (int) (e & 1);
            }
            eof = new byte[nstates];
            b.get(eof);
            loops = new ByteSet[nstates];
            loopFlag = new boolean[nstates];
            for (int st = 1; st < nstates; st++) loop(st, raw);
            trans = new int[raw.length];
            for (int k = 0; k < raw.length; k++) {
                int target = raw[k] >>> 1;
                trans[k] = ((target * nclasses) << 2) | (loops[target] != null ? 2 : 0) | (raw[k] & 1);
            }
        }

        /** The bytes on which state st goes to itself with the same flag (the larger set of the two flags), when
         *  there are at least LOOP_MIN of them: then they are skipped without a table read each. */
        private void loop(int st, int[] raw) {
            long[] m = new long[4];  // flag 0: bytes 0..63, 64..127; flag 1: the same
            int[] count = new int[2];
            for (int c = 0; c < 128; c++) {
                int e = raw[st * nclasses + (classmap[c] & 0xFF)];
                if (e >>> 1 != st) continue;
                m[2 * (e & 1) + (c >>> 6)] |= 1L << c;
                count[e & 1]++;
            }
            int f = count[1] > count[0] ? 1 : 0;
            if (count[f] >= LOOP_MIN) {
                loops[st] = new ByteSet(m[2 * f], m[2 * f + 1]);
                loopFlag[st] = f == 1;
            }
        }

        private static int checked(int state, int nstates) {
            if (state < 0 || state >= nstates) throw new IllegalArgumentException("etl: bad grok DFA state");
            return state;
        }

        /** Whether some match starts at p (run(s, p) >= 0, without reading past the first match found). */
        boolean any(Line s, int p) {
            return scan(s, p, true) >= 0;
        }

        /** The end of the first match starting at p, or -1. */
        int run(Line s, int p) {
            return scan(s, p, false);
        }

        /** The run loop of etl/grokvm/codec.py; `first`: return at the first match seen (any end will do). */
        private int scan(Line s, int p, boolean first) {
            int state = start[p == 0 ? startCtx : prevmap[s.at(p - 1)]];
            int last = -1;
            final int[] t = trans;
            final byte[] cm = classmap;
            final Object base = s.base;
            final long off = s.off;
            final int n = s.n;
            int i = p;
            for (; i < n; i++) {
                int e = t[state + cm[Platform.getByte(base, off + i)]];
                if ((e & 1) != 0) {
                    if (first) {
                        s.budget -= i - p + 1;
                        return i;
                    }
                    last = i;
                }
                state = e >>> 2;
                if (state == 0) {
                    s.budget -= i - p + 1;
                    return last;
                }
                if ((e & 2) != 0) {  // a looping state: the bytes it loops on, at once
                    int k = state / nclasses;
                    int j = loops[k].skip(base, off, i + 1, n);
                    if (j > i + 1) {
                        if (loopFlag[k]) {
                            if (first) {
                                s.budget -= i + 2 - p;
                                return i + 1;
                            }
                            last = j - 1;
                        }
                        i = j - 1;
                    }
                }
            }
            s.budget -= i - p + 1;
            return eof[state / nclasses] != 0 ? s.n : last;
        }
    }

    /**
     * A set of ASCII bytes, and the first byte at or after a position that is not in it. Where the set leaves out
     * at most 3 ranges of bytes, eight bytes are tested at a time (the "has a byte between" bit trick, exact for
     * bytes below 128: the line is ASCII).
     */
    static final class ByteSet {
        private static final long ONES = 0x0101010101010101L;
        private static final long HIGH = 0x8080808080808080L;
        private final byte[] member = new byte[128];
        // per range [a, b] of bytes left out (at most 3; unused: a range no byte is in): 127 + (b + 1) and
        // 127 - (a - 1), per byte. A byte v < 128 is in the range when 127 + (b + 1) - v and v + 127 - (a - 1) both
        // reach 128; no byte carries into the next.
        private final long b0;
        private final long a0;
        private final long b1;
        private final long a1;
        private final long b2;
        private final long a2;
        private final boolean words;  // at most 3 ranges: 8 bytes at a time

        /** The set of bytes c whose bit is set: bit c of lo (c < 64), bit c - 64 of hi (64 <= c < 128). */
        ByteSet(long lo, long hi) {
            java.util.List<int[]> out = new java.util.ArrayList<>();  // the ranges of bytes not in the set
            for (int c = 0; c < 128; c++) {
                boolean in = ((c < 64 ? lo >>> c : hi >>> c) & 1) != 0;
                member[c] = (byte) (in ? 1 : 0);
                if (in) continue;
                if (!out.isEmpty() && out.get(out.size() - 1)[1] == c - 1) out.get(out.size() - 1)[1] = c;
                else out.add(new int[] {c, c});
            }
            words = out.size() <= 3;
            while (out.size() < 3) out.add(new int[] {1, -1});  // no byte: v <= -1 never holds
            b0 = ONES * (127 + out.get(0)[1] + 1);
            a0 = ONES * (127 - (out.get(0)[0] - 1));
            b1 = ONES * (127 + out.get(1)[1] + 1);
            a1 = ONES * (127 - (out.get(1)[0] - 1));
            b2 = ONES * (127 + out.get(2)[1] + 1);
            a2 = ONES * (127 - (out.get(2)[0] - 1));
        }

        /** Whether some byte of the 8 in x (each below 128) is left out of the set. */
        private boolean leftOut(long x) {
            long v = x & ONES * 127;
            return (((b0 - v) & (v + a0) | (b1 - v) & (v + a1) | (b2 - v) & (v + a2)) & ~x & HIGH) != 0;
        }

        /** The first i in [from, limit) whose byte is not in the set, else limit. */
        int skip(Object base, long off, int from, int limit) {
            int i = from;
            if (words) {
                while (i + 8 <= limit && !leftOut(Platform.getLong(base, off + i))) i += 8;
            }
            final byte[] m = member;
            while (i < limit && m[Platform.getByte(base, off + i)] != 0) i++;
            return i;
        }
    }

    abstract static class Node {
        /** A position >= p, NOMATCH or FALLBACK. */
        abstract int eval(Line s, int p);
    }

    static final class Lit extends Node {
        final boolean caseless;
        final byte[] data;

        Lit(boolean caseless, byte[] data) {
            this.caseless = caseless;
            this.data = data;
        }

        @Override
        int eval(Line s, int p) {
            int q = p + data.length;
            if (q > s.n) return NOMATCH;
            for (int i = 0; i < data.length; i++) {
                int c = s.at(p + i);
                if (caseless && c >= 'A' && c <= 'Z') c += 32;
                if (c != data[i]) return NOMATCH;
            }
            return q;
        }
    }

    static final class Leaf extends Node {
        final Dfa dfa;

        Leaf(Dfa dfa) {
            this.dfa = dfa;
        }

        @Override
        int eval(Line s, int p) {
            int e = dfa.run(s, p);
            return s.budget < 0 ? FALLBACK : e >= 0 ? e : NOMATCH;
        }
    }

    static final class Cap extends Node {
        final int group;
        final Node child;

        Cap(int group, Node child) {
            this.group = group;
            this.child = child;
        }

        @Override
        int eval(Line s, int p) {
            int r = child.eval(s, p);
            if (r >= 0) s.span(group, p, r);
            return r;
        }
    }

    /** A capture of a leaf fused with the literal after it: the capture ends `tail` bytes before the DFA's end. */
    static final class FCap extends Node {
        final int group;
        final Dfa dfa;
        final int tail;

        FCap(int group, Dfa dfa, int tail) {
            this.group = group;
            this.dfa = dfa;
            this.tail = tail;
        }

        @Override
        int eval(Line s, int p) {
            int e = dfa.run(s, p);
            if (s.budget < 0) return FALLBACK;
            if (e < 0) return NOMATCH;
            s.span(group, p, e - tail);
            return e;
        }
    }

    static final class Seq extends Node {
        final Node[] children;

        Seq(Node[] children) {
            this.children = children;
        }

        @Override
        int eval(Line s, int p) {
            for (int i = 0; i < children.length; i++) {
                int r = children[i].eval(s, p);
                if (r < 0) return i == 0 ? r : FALLBACK;
                p = r;
            }
            return p;
        }
    }

    static final class Alt extends Node {
        final Dfa[] probes;  // null: none
        final Node[] options;

        Alt(Dfa[] probes, Node[] options) {
            this.probes = probes;
            this.options = options;
        }

        @Override
        int eval(Line s, int p) {
            for (int k = 0; k < options.length; k++) {
                if (probes[k] != null && !probes[k].any(s, p)) {
                    if (s.budget < 0) return FALLBACK;
                    continue;
                }
                int r = options[k].eval(s, p);
                if (r != NOMATCH) return r;  // a position, or FALLBACK
            }
            return NOMATCH;
        }
    }

    static final class Loop extends Node {
        final long min;
        final long max;  // -1: unbounded
        final Dfa probe;
        final Node body;

        Loop(long min, long max, Dfa probe, Node body) {
            this.min = min;
            this.max = max;
            this.probe = probe;
            this.body = body;
        }

        @Override
        int eval(Line s, int p) {
            long count = 0;
            while (max < 0 || count < max) {
                if (count >= min && probe != null && !probe.any(s, p)) {
                    if (s.budget < 0) return FALLBACK;
                    break;
                }
                int r = body.eval(s, p);
                if (r == FALLBACK) return FALLBACK;
                if (r < 0) {
                    if (count >= min) break;
                    if (count == 0) return NOMATCH;
                    return FALLBACK;
                }
                p = r;
                count++;
            }
            return p;
        }
    }

    static final class Look extends Node {
        final boolean negate;
        final Dfa dfa;

        Look(boolean negate, Dfa dfa) {
            this.negate = negate;
            this.dfa = dfa;
        }

        @Override
        int eval(Line s, int p) {
            boolean matched = dfa.any(s, p);
            if (s.budget < 0) return FALLBACK;
            return matched != negate ? p : NOMATCH;
        }
    }

    /** A run of bytes of a set, then the rest of its sequence, whose probe picks the end. */
    static final class Scan extends Node {
        final int group;  // 0: none
        final ByteSet set;
        final long min;
        final long max;  // -1: unbounded
        final boolean greedy;
        final Dfa probe;

        Scan(int group, byte[] set, long min, long max, boolean greedy, Dfa probe) {
            this.group = group;
            ByteBuffer b = ByteBuffer.wrap(set).order(ByteOrder.LITTLE_ENDIAN);
            this.set = new ByteSet(b.getLong(), b.getLong());
            this.min = min;
            this.max = max;
            this.greedy = greedy;
            this.probe = probe;
        }

        @Override
        int eval(Line s, int p) {
            int lim = (int) (max < 0 ? s.n : Math.min(s.n, p + max));
            int q = set.skip(s.base, s.off, p, lim);
            if (q - p < min) return NOMATCH;
            int first = (int) (p + min);
            if (greedy) {
                for (int e = q; e >= first; e--) {
                    if (probe.any(s, e)) return found(s, p, e);
                    if (s.budget < 0) return FALLBACK;
                }
            } else {
                for (int e = first; e <= q; e++) {
                    if (probe.any(s, e)) return found(s, p, e);
                    if (s.budget < 0) return FALLBACK;
                }
            }
            return NOMATCH;
        }

        private int found(Line s, int p, int e) {
            if (group > 0) s.span(group, p, e);
            return e;
        }
    }

    // ------------------------------------------------------------------ reading

    static GrokProgram read(byte[] raw) {
        ByteBuffer b = ByteBuffer.wrap(raw).order(ByteOrder.LITTLE_ENDIAN);
        try {
            byte[] magic = new byte[4];
            b.get(magic);
            if (!new String(magic, StandardCharsets.US_ASCII).equals("GKVM") || (b.getShort() & 0xFFFF) != 1) {
                throw new IllegalArgumentException("etl: not a grok program of format 1");
            }
            int ngroups = b.getShort() & 0xFFFF;
            Dfa[] dfas = new Dfa[b.getShort() & 0xFFFF];
            long lo = b.getLong();
            long hi = b.getLong();
            for (int k = 0; k < dfas.length; k++) dfas[k] = new Dfa(b);
            Node root = node(b, dfas, ngroups);
            if (b.hasRemaining()) throw new IllegalArgumentException("etl: bytes after a grok program");
            return new GrokProgram(ngroups, root, lo, hi);
        } catch (java.nio.BufferUnderflowException e) {
            throw new IllegalArgumentException("etl: truncated grok program", e);
        }
    }

    private static Node node(ByteBuffer b, Dfa[] dfas, int ngroups) {
        int kind = b.get() & 0xFF;
        switch (kind) {
            case 1: {
                boolean caseless = b.get() != 0;
                byte[] data = new byte[b.getShort() & 0xFFFF];
                b.get(data);
                return new Lit(caseless, data);
            }
            case 2:
                return new Leaf(dfa(b, dfas));
            case 3: {
                int g = group(b, ngroups);
                return new Cap(g, node(b, dfas, ngroups));
            }
            case 4: {
                int g = group(b, ngroups);
                return new FCap(g, dfa(b, dfas), b.getShort() & 0xFFFF);
            }
            case 5: {
                Node[] children = new Node[b.getShort() & 0xFFFF];
                for (int i = 0; i < children.length; i++) children[i] = node(b, dfas, ngroups);
                return new Seq(children);
            }
            case 6: {
                int n = b.getShort() & 0xFFFF;
                Dfa[] probes = new Dfa[n];
                Node[] options = new Node[n];
                for (int i = 0; i < n; i++) {
                    probes[i] = probe(b, dfas);
                    options[i] = node(b, dfas, ngroups);
                }
                return new Alt(probes, options);
            }
            case 7: {
                long min = b.getInt() & 0xFFFFFFFFL;
                long max = bound(b.getInt());
                Dfa probe = probe(b, dfas);
                return new Loop(min, max, probe, node(b, dfas, ngroups));
            }
            case 8: {
                boolean negate = b.get() != 0;
                return new Look(negate, dfa(b, dfas));
            }
            case 9: {
                int g = b.getShort() & 0xFFFF;
                if (g > ngroups) throw new IllegalArgumentException("etl: bad grok group");
                byte[] set = new byte[16];
                b.get(set);
                long min = b.getInt() & 0xFFFFFFFFL;
                long max = bound(b.getInt());
                boolean greedy = b.get() != 0;
                return new Scan(g, set, min, max, greedy, dfa(b, dfas));
            }
            default:
                throw new IllegalArgumentException("etl: unknown grok node kind " + kind);
        }
    }

    private static long bound(int raw) {
        return raw == -1 ? -1 : raw & 0xFFFFFFFFL;
    }

    private static int group(ByteBuffer b, int ngroups) {
        int g = b.getShort() & 0xFFFF;
        if (g < 1 || g > ngroups) throw new IllegalArgumentException("etl: bad grok group " + g);
        return g;
    }

    private static Dfa dfa(ByteBuffer b, Dfa[] dfas) {
        int k = b.getShort() & 0xFFFF;
        if (k >= dfas.length) throw new IllegalArgumentException("etl: bad grok DFA index " + k);
        return dfas[k];
    }

    private static Dfa probe(ByteBuffer b, Dfa[] dfas) {
        int k = b.getShort() & 0xFFFF;
        if (k == 0xFFFF) return null;
        if (k >= dfas.length) throw new IllegalArgumentException("etl: bad grok probe index " + k);
        return dfas[k];
    }
}
