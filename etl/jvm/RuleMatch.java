package etl.jvm;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A filter's rule set decided in the JVM: static calls in generated code, no Python worker.
 *
 * <p>The program file (written by etl/optimize/jvmprogram.py, shipped with SparkContext.addFile) holds each
 * pattern predicate as two java.util.regex patterns with exactly the meaning of Python's {@code re.search}
 * (etl/regexes/javaregex.py: one exact on ASCII values, one on every value), the literal one of which an ASCII
 * value must contain (lower-cased) for the pattern to match, and each rule's boolean tree over the predicates.
 * Per value: the patterns whose first literal occurs (found through a 3-gram bitset of the literals) and whose
 * other needs hold are run, and those without literals; on a value holding a non-ASCII character that folds to an
 * ASCII one (a Kelvin sign) also every pattern with a caseless part. Then the rules each of whose trigger groups has a
 * predicate that held (a group: predicates one of which holds when the rule does), and the rules that can hold without
 * any, are evaluated. A needle (not a contains needle: one scan finds those) or pattern none of whose predicates is
 * in a trigger group is not looked for in every value: an evaluated rule that reads it decides it then, once per
 * row. A program over several fields (etl/optimize/jvmmulti.py,
 * {@link #anyRow}/{@link #idsRow}) does this per field, and also decides its needles (equals, starts with, ends
 * with, contains: byte comparisons found through the same 3-grams), null tests and text comparisons
 * ({@link RuleProgram}). Each field keeps a {@link ValueMemo} of its recent values: a value seen again sets the
 * predicates it held then (and its lazy predicates decided since) without a scan. A rule is looked at when a
 * predicate of its first trigger group holds, and evaluated when each other group has one too.
 *
 * <p>Each search reads the value through a {@link CountedText}: one that runs past its step budget (java.util.regex
 * backtracks), or that overflows the stack (a repeat of a variable-width part recurses per repetition), stops with
 * {@link Exhausted}, whose message names the program file; etl.compile.rules_jvm then moves
 * the rule set to the Python path (Hyperscan, which never backtracks) and the micro-batch runs again.
 */
public final class RuleMatch {
    private static final Shipped<RuleProgram> PROGRAMS = new Shipped<>(8, "rule program", RuleProgram::new);
    private static final PerTask<UTF8String, State> STATES = new PerTask<>();
    private static final GenericArrayData NONE = new GenericArrayData(new Object[0]);
    /** What starts the message of {@link Exhausted}, followed by the program file's name in brackets. */
    static final String BUDGET_MARK = "etl-rule-budget";

    /** A pattern ran past its step budget on a value (catastrophic backtracking). */
    public static final class Exhausted extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Exhausted(String message) {
            super(message, null, false, false);
        }
    }

    private RuleMatch() {}

    /** Does any rule match the value? (keep and drop filters) */
    public static boolean any(UTF8String value, UTF8String file) {
        State s = STATES.get(file, State::new);
        s.begin();
        s.values = null;
        s.single = value;
        s.field(0, value);
        return s.rules(true) > 0;
    }

    /** The ids of the rules matching the value, in rule order (tag filters). */
    public static ArrayData ids(UTF8String value, UTF8String file) {
        State s = STATES.get(file, State::new);
        s.begin();
        s.values = null;
        s.single = value;
        s.field(0, value);
        return ids(s, s.rules(false));
    }

    /** Does any rule match the fields' values? (a struct of string columns, in the program's field order) */
    public static boolean anyRow(InternalRow values, UTF8String file) {
        State s = STATES.get(file, State::new);
        s.row(values);
        return s.rules(true) > 0;
    }

    /** The ids of the rules matching the fields' values, in rule order. */
    public static ArrayData idsRow(InternalRow values, UTF8String file) {
        State s = STATES.get(file, State::new);
        s.row(values);
        return ids(s, s.rules(false));
    }

    /** The metadata of the rules matching the fields' values, in rule order: `details` holds a struct per rule of
     *  the program (in its order), a literal of the plan (tag details without a lookup per id). */
    public static ArrayData detailsRow(InternalRow values, UTF8String file, ArrayData details) {
        State s = STATES.get(file, State::new);
        s.row(values);
        int n = s.rules(false);
        if (n == 0) return NONE;
        Arrays.sort(s.matched, 0, n);
        Object[] out = new Object[n];
        for (int k = 0; k < n; k++) out[k] = details.getStruct(s.matched[k], DETAIL_FIELDS);
        return new GenericArrayData(out);
    }

    private static final int DETAIL_FIELDS = 5;  // rule, id, title, level, tags (etl.spec.sigma.DETAIL_TYPE)

    private static ArrayData ids(State s, int n) {
        if (n == 0) return NONE;
        Arrays.sort(s.matched, 0, n);
        Object[] out = new Object[n];
        for (int k = 0; k < n; k++) out[k] = s.p.ids[s.matched[k]];
        return new GenericArrayData(out);
    }

    /** java.util.regex's find, for tests of the translation. */
    public static boolean find(String regex, String text) {
        return Pattern.compile(regex).matcher(text).find();
    }

    private static final byte HIT = 1, LAZY = 2;

    /** A task's program and its buffers: predicate bits, matchers, stamps. */
    static final class State {
        final RuleProgram p;
        final String file;
        final CountedText input = new CountedText();
        final byte[] leafState;  // per predicate: HIT (holds on this row), LAZY (decided on demand: p.lazyLeaf)
        final int[] touched;
        int nTouched;
        final Matcher[] asciiMatchers;
        final Matcher[] unicodeMatchers;
        final int[] patternStamp;
        final int[] needleStamp;
        final int[] ruleStamp;  // per rule: the epoch it was looked at last
        int epoch;
        final int[] matched;
        final int[] leafStamp;  // a lazy predicate decided in this epoch ...
        final boolean[] leafValue;  // ... holds
        final ValueMemo[] memos;  // per field: the predicates that held on its recent values
        InternalRow values;  // the row being decided (several fields), or
        UTF8String single;  // the value being decided (one field)
        private int loaded = -1;  // the field whose value is in the buffers (a lazy predicate's), -1: none
        private int foldedState;  // of that value: 0 unknown, 1 folds, 2 does not
        private byte[] foldedBytes;

        State(UTF8String file) {
            p = PROGRAMS.get(file.toString());
            this.file = file.toString();
            leafState = new byte[p.leaves];
            for (int l = 0; l < p.leaves; l++) leafState[l] = p.lazyLeaf[l] ? LAZY : 0;
            touched = new int[p.leaves];
            asciiMatchers = new Matcher[p.patterns()];
            unicodeMatchers = new Matcher[p.patterns()];
            patternStamp = new int[p.patterns()];
            needleStamp = new int[p.needles];
            ruleStamp = new int[p.ids.length];
            matched = new int[p.ids.length];
            leafStamp = new int[p.leaves];
            leafValue = new boolean[p.leaves];
            memos = new ValueMemo[p.fields.length];
            for (int k = 0; k < memos.length; k++) memos[k] = new ValueMemo();
        }

        void begin() {
            for (int k = 0; k < nTouched; k++) leafState[touched[k]] &= ~HIT;
            nTouched = 0;
            loaded = -1;
            if (++epoch == Integer.MAX_VALUE) {
                epoch = 1;
                Arrays.fill(patternStamp, 0);
                Arrays.fill(needleStamp, 0);
                Arrays.fill(ruleStamp, 0);
                Arrays.fill(leafStamp, 0);
            }
        }

        void row(InternalRow values) {
            begin();
            this.values = values;
            single = null;
            for (int k = 0; k < p.fields.length; k++) {
                ValueMemo m = memos[k];
                if (values.isNullAt(k)) {
                    m.last = -1;
                    field(k, null);
                    continue;
                }
                UTF8String v = values.getUTF8String(k);
                int[] seen = m.get(v);
                if (seen != null) {
                    set(seen);
                    continue;
                }
                int from = nTouched;
                field(k, v);
                m.put(v, touched, from, nTouched);
            }
            for (RuleProgram.Ref ref : p.refs) {
                if (values.isNullAt(ref.field) || values.isNullAt(ref.other)) continue;
                UTF8String a = values.getUTF8String(ref.field), b = values.getUTF8String(ref.other);
                if (ref.caseless ? p.sameCaseless(a, b) : a.equals(b)) set(ref.leaves);
            }
        }

        /** Evaluates the rules on the bits set: with firstOnly, 1 at the first match (else 0); otherwise the number
         *  of matching rules, whose indices are then in `matched`. */
        int rules(boolean firstOnly) {
            int n = 0;
            int[] stamp = ruleStamp, trig = p.trig, from = p.trigFrom;
            for (int r : p.always) {
                stamp[r] = epoch;
                if (eval(p.root[r])) {
                    if (firstOnly) return 1;
                    matched[n++] = r;
                }
            }
            for (int k = 0; k < nTouched; k++) {
                int l = touched[k];
                for (int j = from[l], e = from[l + 1]; j < e; j++) {
                    int r = trig[j];
                    if (stamp[r] == epoch) continue;  // looked at
                    stamp[r] = epoch;
                    if (!others(r)) continue;  // another trigger group has no predicate that holds
                    if (eval(p.root[r])) {
                        if (firstOnly) return 1;
                        matched[n++] = r;
                    }
                }
            }
            return n;
        }

        /** Does a predicate of each of rule r's trigger groups after the first hold? */
        private boolean others(int r) {
            int[] o = p.others;
            for (int j = p.othersFrom[r], e = p.othersFrom[r + 1]; j < e; ) {
                int to = j + 1 + o[j];
                boolean any = false;
                for (j++; j < to && !any; j++) any = (leafState[o[j]] & HIT) != 0;
                if (!any) return false;
                j = to;
            }
            return true;
        }

        /** The subtree at offset k of p.tree, on the predicates set and the lazy ones (decided when read). */
        private boolean eval(int k) {
            int[] t = p.tree;
            switch (t[k]) {
                case RuleProgram.LEAF: return leaf(t[k + 1]);
                case RuleProgram.TRUE: return true;
                case RuleProgram.FALSE: return false;
                case RuleProgram.NOT: return !eval(k + 3);
                case RuleProgram.AND: {
                    int j = k + 3;
                    for (int c = t[k + 1]; c > 0; c--, j = t[j + 2]) {
                        if (!(t[j] == RuleProgram.LEAF ? leaf(t[j + 1]) : eval(j))) return false;
                    }
                    return true;
                }
                default: {
                    int j = k + 3;
                    for (int c = t[k + 1]; c > 0; c--, j = t[j + 2]) {
                        if (t[j] == RuleProgram.LEAF ? leaf(t[j + 1]) : eval(j)) return true;
                    }
                    return false;
                }
            }
        }

        private boolean leaf(int l) {
            byte s = leafState[l];
            return (s & HIT) != 0 || ((s & LAZY) != 0 && lazy(l));
        }

        /** Does one of the lazy needles or patterns of predicate l hold? (once per row) */
        private boolean lazy(int l) {
            if (leafStamp[l] == epoch) return leafValue[l];
            int k = values != null ? p.lazyField[l] : -1, slot = k >= 0 ? memos[k].last : -1;
            if (slot >= 0) {
                int d = memos[k].decided(slot, l);
                if (d >= 0) {
                    leafStamp[l] = epoch;
                    return leafValue[l] = d == 1;
                }
            }
            boolean v = false;
            for (int id : p.lazyNeedles[l]) {
                RuleProgram.Needle nd = p.needleList[id];
                if (load(nd.field)) {
                    if (nd.caseless && folded()) v = nd.holds(foldedBytes, foldedBytes.length);
                    else v = nd.holds(buf, len);
                    if (v) break;
                }
            }
            if (!v) {
                for (int pat : p.lazyPatterns[l]) {
                    if (!load(p.patternField[pat])) continue;
                    if (p.patternWide[pat]) v = !ascii && run(pat);
                    else if (p.patternCaseless[pat] && folded()) v = run(pat);
                    else v = LiteralPrefilter.Grams.holds(buf, len, p.rest[pat]) && run(pat);
                    if (v) break;
                }
            }
            leafStamp[l] = epoch;
            leafValue[l] = v;
            if (slot >= 0) memos[k].decide(slot, l, v);
            return v;
        }

        /** Field k's value into the buffers (after the row's fields were read); false when it is null. */
        private boolean load(int k) {
            if (loaded == k) return true;
            UTF8String v = values != null ? (values.isNullAt(k) ? null : values.getUTF8String(k)) : single;
            if (v == null) return false;
            copy(v);
            loaded = k;
            foldedState = 0;
            return true;
        }

        /** Does the loaded value hold a folding character? (its caseless needles compare its folded form) */
        private boolean folded() {
            if (foldedState == 0) {
                boolean f = !ascii && folds(text());
                foldedState = f ? 1 : 2;
                if (f) foldedBytes = p.folded(text());
            }
            return foldedState == 1;
        }

        private void copy(UTF8String v) {
            int n = v.numBytes();
            if (n > buf.length) buf = new byte[Math.max(n, 2 * buf.length)];
            Platform.copyMemory(v.getBaseObject(), v.getBaseOffset(), buf, Platform.BYTE_ARRAY_OFFSET, n);
            len = n;
            ascii = Grok.ascii(buf, Platform.BYTE_ARRAY_OFFSET, n);
            value = v;
            text = null;
            textSet = false;
        }

        private byte[] buf = new byte[256];  // the value's bytes (a copy: no allocation per row)
        private int len;
        private boolean ascii;
        private UTF8String value;
        private String text;  // the value as a String, made when a pattern runs
        private boolean textSet;  // are the value's chars in `input`?

        private void set(int[] leaves) {
            set(leaves, 0, leaves.length);
        }

        private void set(int[] leaves, int from, int to) {
            for (int k = from; k < to; k++) {
                int leaf = leaves[k];
                if ((leafState[leaf] & HIT) == 0) {
                    leafState[leaf] |= HIT;
                    touched[nTouched++] = leaf;
                }
            }
        }

        /** Sets the bits of field k's predicates that hold on its value v (null: missing). */
        void field(int k, UTF8String v) {
            RuleProgram.Field fl = p.fields[k];
            if (v == null) {
                set(fl.nullLeaves);
                return;
            }
            set(fl.valueLeaves);
            copy(v);  // the chars the patterns read are made when the first one runs
            int n = len;
            byte[] b = buf;
            boolean asc = ascii;
            // a value holding a character an ASCII letter matches caselessly (the Kelvin sign): the literals and
            // byte comparisons of caseless parts do not hold, their patterns decide
            boolean folded = !asc && (fl.caseless.length > 0 || fl.caselessAll.length > 0) && folds(text());
            if (folded) {
                for (int i : fl.caseless) {
                    patternStamp[i] = epoch;
                    test(i);
                }
                byte[] f = p.folded(text());
                for (RuleProgram.Needle nd : fl.caselessAll) if (nd.holds(f, f.length)) set(nd.leaves);
            }
            for (int i : fl.unconditional) {
                if (patternStamp[i] == epoch) continue;
                patternStamp[i] = epoch;
                if (LiteralPrefilter.Grams.holds(b, n, p.rest[i])) test(i);
            }
            if (!asc) for (int i : fl.nonAscii) test(i);
            for (RuleProgram.Compare c : fl.compares) if (c.holds(b, n)) set(c.leaves);
            for (IpNets c : fl.nets) if (c.holds(text())) set(c.leaves);
            for (RuleProgram.Needle nd : fl.loose) if (!(folded && nd.caseless) && nd.holds(b, n)) set(nd.leaves);
            if (fl.heads != null) heads(fl.heads, fl.headLengths, b, n, folded);
            if (fl.tails != null) tails(fl.tails, fl.tailLengths, b, n, folded);
            if (fl.shorts != null) shortNeedles(fl.shorts, fl.shortBits, b, n, folded);
            NeedleTable t3 = fl.grams3, t4 = fl.grams4;
            if (t3 == null && t4 == null) return;
            if (fl.stride > 0) {  // only long contains needles (RuleProgram.file4)
                for (int i = 0; i + 4 <= n; i += fl.stride) {
                    int s = t4.find(RuleProgram.key4(b, i) & 0xffffffffL);
                    if (s >= 0) mark(t4, s, b, n, i, folded);
                }
                return;
            }
            int g = n < 3 ? 0 : RuleProgram.low(b[0]) << 8 | RuleProgram.low(b[1]);
            for (int i = 0; i + 3 <= n; i++) {
                g = (g << 8 | RuleProgram.low(b[i + 2])) & 0xffffff;  // RuleProgram.key(b, i)
                if (t4 != null && i + 4 <= n) {
                    int s = t4.find((g << 8 | RuleProgram.low(b[i + 3])) & 0xffffffffL);
                    if (s >= 0) mark(t4, s, b, n, i, folded);
                }
                if (t3 == null) continue;
                int s = t3.find(g);
                if (s < 0) continue;
                mark(t3, s, b, n, i, folded);
                int x = t3.extra(s);
                if (x < 0) continue;
                byte[][] lits = fl.literals[x];
                int[][] pats = fl.literalPatterns[x];
                for (int j = 0; j < lits.length; j++) {
                    if (!LiteralPrefilter.Grams.equalAt(b, n, i, lits[j])) continue;
                    for (int pat : pats[j]) {
                        if (patternStamp[pat] == epoch) continue;
                        patternStamp[pat] = epoch;
                        if (LiteralPrefilter.Grams.holds(b, n, p.rest[pat])) test(pat);
                    }
                }
            }
        }

        /** The equals and starts with needles filed under the value's first m bytes, for each m in use. */
        private void heads(NeedleTable t, int lengths, byte[] b, int n, boolean folded) {
            long h = 0;
            if ((lengths & 1) != 0) affixes(t, t.find(NeedleTable.affixKey(0, 0)), b, n, folded);  // empty needles
            for (int j = 0, top = Math.min(n, RuleProgram.Field.LONGEST); j < top; j++) {
                h = h * 257 + RuleProgram.low(b[j]);
                if ((lengths & (2 << j)) != 0) affixes(t, t.find(NeedleTable.affixKey(h, j + 1)), b, n, folded);
            }
        }

        /** The ends with needles filed under the value's last m bytes, for each m in use. */
        private void tails(NeedleTable t, int lengths, byte[] b, int n, boolean folded) {
            long h = 0;
            if ((lengths & 1) != 0) affixes(t, t.find(NeedleTable.affixKey(0, 0)), b, n, folded);  // empty needles
            for (int j = 0, top = Math.min(n, RuleProgram.Field.LONGEST); j < top; j++) {
                h = h * 257 + RuleProgram.low(b[n - 1 - j]);
                if ((lengths & (2 << j)) != 0) affixes(t, t.find(NeedleTable.affixKey(h, j + 1)), b, n, folded);
            }
        }

        private void affixes(NeedleTable t, int s, byte[] b, int n, boolean folded) {
            if (s < 0) return;
            int[] c = t.cand;
            for (int k = t.from(s), e = t.to(s); k < e; k += NeedleTable.STRIDE) {
                if (folded && (c[k + NeedleTable.FLAGS] & NeedleTable.CASELESS) != 0) continue;
                if (t.affix(k, b, n)) set(t.leaves, c[k + NeedleTable.LEAVES], c[k + NeedleTable.LEAVES_END]);
            }
        }

        /** The contains needles of 1 or 2 bytes. */
        private void shortNeedles(NeedleTable t, long[] bits, byte[] b, int n, boolean folded) {
            for (int i = 0, x = n == 0 ? 0 : RuleProgram.low(b[0]); i < n; i++) {
                if ((bits[x >>> 6] & (1L << x)) != 0) {
                    int s = t.find(x);
                    if (s >= 0) mark(t, s, b, n, i, folded);
                }
                if (i + 1 == n) break;
                int y = RuleProgram.low(b[i + 1]), pair = 1 << 16 | x << 8 | y;
                if ((bits[pair >>> 6] & (1L << pair)) != 0) {
                    int s = t.find(pair);
                    if (s >= 0) mark(t, s, b, n, i, folded);
                }
                x = y;
            }
        }

        /** Sets the predicates of slot s's contains needles found at position i - their anchor. */
        private void mark(NeedleTable t, int s, byte[] b, int n, int i, boolean folded) {
            int[] c = t.cand;
            for (int k = t.from(s), e = t.to(s); k < e; k += NeedleTable.STRIDE) {
                int id = c[k + NeedleTable.ID];
                if (needleStamp[id] == epoch || (folded && (c[k + NeedleTable.FLAGS] & NeedleTable.CASELESS) != 0)
                    || !t.at(k, b, n, i - c[k + NeedleTable.ANCHOR])) {
                    continue;
                }
                needleStamp[id] = epoch;
                set(t.leaves, c[k + NeedleTable.LEAVES], c[k + NeedleTable.LEAVES_END]);
            }
        }

        private String text() {
            if (text == null) text = ascii ? new String(buf, 0, len, StandardCharsets.ISO_8859_1) : value.toString();
            return text;
        }

        /** Does the value hold a character a caseless ASCII literal matches? (its literals do not hold then) */
        private boolean folds(String s) {
            for (int c : p.folding) if (s.indexOf(c) >= 0) return true;
            return false;
        }

        private void test(int pat) {
            if (run(pat)) set(p.patternLeaves[pat]);
        }

        /** Does pattern pat find a match in the value? */
        private boolean run(int pat) {
            Matcher[] ms = ascii ? asciiMatchers : unicodeMatchers;
            Matcher m = ms[pat];
            if (!textSet) {
                if (ascii) input.set(buf, len);
                else input.set(text());
                textSet = true;
            }
            if (m == null) {
                m = ms[pat] = p.pattern(pat, ascii).matcher(input.budget());
            } else {
                m.reset(input.budget());
            }
            boolean found;
            try {
                found = m.find();
            } catch (CountedText.Exhausted e) {
                throw new Exhausted(BUDGET_MARK + "[" + file + "] pattern " + pat + " read more than " + input.limit()
                                    + " characters of a value of " + input.length()
                                    + " characters (catastrophic backtracking in java.util.regex)");
            } catch (StackOverflowError e) {
                ms[pat] = null;
                throw new Exhausted(BUDGET_MARK + "[" + file + "] pattern " + pat + " overflowed the stack on a value"
                                    + " of " + input.length() + " characters (java.util.regex recursion)");
            }
            return found;
        }
    }
}
