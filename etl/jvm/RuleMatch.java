package etl.jvm;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

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
 * ASCII one (a Kelvin sign) also every pattern with a caseless part. Then the rules using a predicate that held, and
 * the rules that can hold without any, are evaluated.
 *
 * <p>Each search reads the value through a {@link CountedText}: one that runs past its step budget (java.util.regex
 * backtracks) stops with {@link Exhausted}, whose message names the program file; etl.compile.rules_jvm then moves
 * the rule set to the Python path (Hyperscan, which never backtracks) and the micro-batch runs again.
 */
public final class RuleMatch {
    private static final Shipped<Program> PROGRAMS = new Shipped<>(8, "rule program", Program::new);
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
        return s.run(value, true) > 0;
    }

    /** The ids of the rules matching the value, in rule order (tag filters). */
    public static ArrayData ids(UTF8String value, UTF8String file) {
        State s = STATES.get(file, State::new);
        int n = s.run(value, false);
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

    private static final byte[] LOW = LiteralPrefilter.Grams.LOW;  // ASCII lower-casing

    /** The rule set of one program file. */
    static final class Program {
        static final int LEAF = 0, TRUE = 1, FALSE = 2, NOT = 3, AND = 4, OR = 5;

        final int leaves;
        final Pattern[] ascii;
        final String[] unicodeText;  // compiled on first use: values with other characters may never come
        final Pattern[] unicode;
        final int[][] patternLeaves;
        final byte[][][][] rest;  // pattern -> its other needs -> their literals (lower case)
        final int[] unconditional;  // patterns without a literal: run on every value
        final int[] caseless;  // patterns whose literals are folded: run on every value holding a `folding` character
        int[] folding = new int[0];  // the non-ASCII characters Python matches caselessly with an ASCII one
        final long[] grams = new long[1 << 15];  // 3-grams (7 bits per character) starting a literal
        final Map<Integer, byte[][]> literals = new HashMap<>();  // 3-gram -> literals starting with it
        final Map<Integer, int[][]> literalPatterns = new HashMap<>();  // ... -> the patterns of each
        final UTF8String[] ids;
        final int[][] kinds;  // per rule, its tree in prefix order: node kinds
        final int[][] args;  // ... a leaf's predicate or a node's number of children
        final int[][] ends;  // ... the index after each node's subtree
        final int[] always;  // rules that can hold with every predicate false
        final int[][] leafRules;  // predicate -> the rules using it

        Program(List<String> lines) {
            List<String[]> pats = new ArrayList<>();
            List<String[]> rules = new ArrayList<>();
            Map<String, String> classes = new HashMap<>();
            int nLeaves = 0;
            for (String line : lines) {
                if (line.isEmpty()) continue;
                String[] f = line.split(" ", -1);
                switch (f[0]) {
                    case "L": nLeaves = Integer.parseInt(f[1]); break;
                    case "F":
                        folding = f[1].isEmpty() ? new int[0]
                                  : Arrays.stream(f[1].split(",")).mapToInt(h -> Integer.parseInt(h, 16)).toArray();
                        break;
                    case "S": classes.put(f[1], text(f[2])); break;
                    case "P": pats.add(f); break;
                    case "R": rules.add(f); break;
                    default: break;
                }
            }
            leaves = nLeaves;
            ascii = new Pattern[pats.size()];
            unicode = new Pattern[pats.size()];
            unicodeText = new String[pats.size()];
            patternLeaves = new int[pats.size()][];
            rest = new byte[pats.size()][][][];
            List<Integer> uncond = new ArrayList<>();
            List<Integer> folding = new ArrayList<>();
            Map<Integer, List<byte[]>> lits = new HashMap<>();
            Map<Integer, List<int[]>> litPats = new HashMap<>();
            Map<String, List<Integer>> byLiteral = new HashMap<>();
            for (int i = 0; i < pats.size(); i++) {
                String[] f = pats.get(i);
                patternLeaves[i] = ints(f[1]);
                ascii[i] = Pattern.compile(expand(text(f[2]), classes));
                unicodeText[i] = expand(text(f[3]), classes);
                rest[i] = new byte[0][][];
                if (f[4].equals("-")) {
                    uncond.add(i);
                } else {
                    if (f[5].equals("c")) folding.add(i);
                    String[] needs = f[4].split(";");
                    for (String h : needs[0].split(",")) byLiteral.computeIfAbsent(text(h), k -> new ArrayList<>()).add(i);
                    rest[i] = new byte[needs.length - 1][][];
                    for (int k = 1; k < needs.length; k++) rest[i][k - 1] = LiteralPrefilter.need(needs[k]);
                }
            }
            for (Map.Entry<String, List<Integer>> e : byLiteral.entrySet()) {
                byte[] lit = e.getKey().getBytes(StandardCharsets.US_ASCII);
                int g = gram(lit, 0);
                grams[g >>> 6] |= 1L << (g & 63);
                lits.computeIfAbsent(g, k -> new ArrayList<>()).add(lit);
                litPats.computeIfAbsent(g, k -> new ArrayList<>())
                       .add(e.getValue().stream().mapToInt(Integer::intValue).toArray());
            }
            for (Map.Entry<Integer, List<byte[]>> e : lits.entrySet()) {
                literals.put(e.getKey(), e.getValue().toArray(new byte[0][]));
                literalPatterns.put(e.getKey(), litPats.get(e.getKey()).toArray(new int[0][]));
            }
            unconditional = uncond.stream().mapToInt(Integer::intValue).toArray();
            caseless = folding.stream().mapToInt(Integer::intValue).toArray();
            ids = new UTF8String[rules.size()];
            kinds = new int[rules.size()][];
            args = new int[rules.size()][];
            ends = new int[rules.size()][];
            List<Integer> alw = new ArrayList<>();
            List<List<Integer>> byLeaf = new ArrayList<>();
            for (int l = 0; l < leaves; l++) byLeaf.add(new ArrayList<>());
            for (int r = 0; r < rules.size(); r++) {
                String[] f = rules.get(r);
                ids[r] = UTF8String.fromString(text(f[1]));
                if (f[2].equals("1")) alw.add(r);
                String[] toks = f[3].split(",");
                kinds[r] = new int[toks.length];
                args[r] = new int[toks.length];
                for (int k = 0; k < toks.length; k++) {
                    String t = toks[k];
                    char c = t.charAt(0);
                    kinds[r][k] = c == 'P' ? LEAF : c == 'T' ? TRUE : c == 'F' ? FALSE : c == 'N' ? NOT
                                  : c == 'A' ? AND : OR;
                    if (t.length() > 1) args[r][k] = Integer.parseInt(t.substring(1));
                    if (c == 'P' && !byLeaf.get(args[r][k]).contains(r)) byLeaf.get(args[r][k]).add(r);
                }
                ends[r] = new int[toks.length];
                end(r, 0);
            }
            always = alw.stream().mapToInt(Integer::intValue).toArray();
            leafRules = new int[leaves][];
            for (int l = 0; l < leaves; l++) leafRules[l] = byLeaf.get(l).stream().mapToInt(Integer::intValue).toArray();
        }

        private int end(int r, int k) {
            int j = k + 1;
            int kind = kinds[r][k];
            if (kind == NOT) {
                j = end(r, j);
            } else if (kind == AND || kind == OR) {
                for (int c = 0; c < args[r][k]; c++) j = end(r, j);
            }
            ends[r][k] = j;
            return j;
        }

        boolean eval(int r, int k, boolean[] hit) {
            switch (kinds[r][k]) {
                case LEAF: return hit[args[r][k]];
                case TRUE: return true;
                case FALSE: return false;
                case NOT: return !eval(r, k + 1, hit);
                case AND: {
                    int j = k + 1;
                    for (int c = 0; c < args[r][k]; c++, j = ends[r][j]) if (!eval(r, j, hit)) return false;
                    return true;
                }
                default: {
                    int j = k + 1;
                    for (int c = 0; c < args[r][k]; c++, j = ends[r][j]) if (eval(r, j, hit)) return true;
                    return false;
                }
            }
        }

        synchronized Pattern unicode(int i) {
            Pattern u = unicode[i];
            if (u == null) unicode[i] = u = Pattern.compile(unicodeText[i]);
            return u;
        }

        /** The 3 characters at i, lower-cased, or -1 when one is not ASCII (no literal starts there). */
        static int gram(byte[] b, int i) {
            int x = b[i], y = b[i + 1], z = b[i + 2];
            if ((x | y | z) < 0) return -1;
            return (LOW[x] << 14) | (LOW[y] << 7) | LOW[z];
        }

        private static final Pattern MARK = Pattern.compile("@(\\d+)@");

        /** The pattern with its marks @n@ replaced by the long classes they stand for (the S lines). */
        private static String expand(String pattern, Map<String, String> classes) {
            if (pattern.indexOf('@') < 0) return pattern;
            Matcher m = MARK.matcher(pattern);
            StringBuilder out = new StringBuilder();
            while (m.find()) {
                String c = classes.get(m.group(1));
                if (c == null) throw new IllegalArgumentException("etl: rule program without class " + m.group(1));
                m.appendReplacement(out, Matcher.quoteReplacement(c));
            }
            m.appendTail(out);
            return out.toString();
        }

        private static int[] ints(String s) {
            if (s.isEmpty()) return new int[0];
            return Arrays.stream(s.split(",")).mapToInt(Integer::parseInt).toArray();
        }

        private static String text(String hex) {
            return new String(LiteralPrefilter.unhex(hex), StandardCharsets.UTF_8);
        }
    }

    /** A task's program and its buffers: predicate bits, matchers, stamps. */
    static final class State {
        final Program p;
        final String file;
        final CountedText input = new CountedText();
        final boolean[] hit;
        final int[] touched;
        int nTouched;
        final Matcher[] asciiMatchers;
        final Matcher[] unicodeMatchers;
        final int[] patternStamp;
        final int[] ruleStamp;
        int epoch;
        final int[] matched;

        State(UTF8String file) {
            p = PROGRAMS.get(file.toString());
            this.file = file.toString();
            hit = new boolean[p.leaves];
            touched = new int[p.leaves];
            asciiMatchers = new Matcher[p.ascii.length];
            unicodeMatchers = new Matcher[p.ascii.length];
            patternStamp = new int[p.ascii.length];
            ruleStamp = new int[p.ids.length];
            matched = new int[p.ids.length];
        }

        /** Evaluates the rules on the value: with firstOnly, 1 at the first match (else 0); otherwise the number
         *  of matching rules, whose indices are then in `matched`. */
        int run(UTF8String value, boolean firstOnly) {
            for (int k = 0; k < nTouched; k++) hit[touched[k]] = false;
            nTouched = 0;
            if (++epoch == Integer.MAX_VALUE) {
                epoch = 1;
                Arrays.fill(patternStamp, 0);
                Arrays.fill(ruleStamp, 0);
            }
            if (value != null) patterns(value);
            int n = 0;
            for (int r : p.always) {
                ruleStamp[r] = epoch;
                if (p.eval(r, 0, hit)) {
                    if (firstOnly) return 1;
                    matched[n++] = r;
                }
            }
            for (int k = 0; k < nTouched; k++) {
                for (int r : p.leafRules[touched[k]]) {
                    if (ruleStamp[r] == epoch) continue;
                    ruleStamp[r] = epoch;
                    if (p.eval(r, 0, hit)) {
                        if (firstOnly) return 1;
                        matched[n++] = r;
                    }
                }
            }
            return n;
        }

        private byte[] buf = new byte[256];  // the value's bytes (a copy: no allocation per row)
        private int len;
        private boolean ascii;
        private UTF8String value;
        private String text;  // the value as a String, made when a pattern runs
        private boolean textSet;  // are the value's chars in `input`?

        private void patterns(UTF8String v) {
            int n = v.numBytes();
            if (n > buf.length) buf = new byte[Math.max(n, 2 * buf.length)];
            byte[] b = buf;
            Platform.copyMemory(v.getBaseObject(), v.getBaseOffset(), b, Platform.BYTE_ARRAY_OFFSET, n);
            boolean asc = Grok.ascii(b, Platform.BYTE_ARRAY_OFFSET, n);
            len = n;
            ascii = asc;
            value = v;
            text = null;
            textSet = false;  // the chars the patterns read are made when the first one runs
            for (int i : p.unconditional) test(i);
            if (!asc && p.caseless.length > 0 && folds(text())) {
                for (int i : p.caseless) {
                    patternStamp[i] = epoch;
                    test(i);
                }
            }
            for (int i = 0; i + 3 <= n; i++) {
                int g = Program.gram(b, i);
                if (g < 0 || (p.grams[g >>> 6] & (1L << (g & 63))) == 0) continue;
                byte[][] lits = p.literals.get(g);
                int[][] pats = p.literalPatterns.get(g);
                for (int j = 0; j < lits.length; j++) {
                    if (!LiteralPrefilter.Grams.equalAt(b, n, i, lits[j])) continue;
                    for (int pat : pats[j]) {
                        if (patternStamp[pat] == epoch) continue;
                        patternStamp[pat] = epoch;
                        if (LiteralPrefilter.Grams.holds(b, n, p.rest[pat])) test(pat);
                    }
                }
            }
            value = null;
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
            Matcher[] ms = ascii ? asciiMatchers : unicodeMatchers;
            Matcher m = ms[pat];
            if (!textSet) {
                if (ascii) input.set(buf, len);
                else input.set(text());
                textSet = true;
            }
            if (m == null) {
                m = ms[pat] = (ascii ? p.ascii[pat] : p.unicode(pat)).matcher(input.budget());
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
            }
            if (!found) return;
            for (int leaf : p.patternLeaves[pat]) {
                if (!hit[leaf]) {
                    hit[leaf] = true;
                    touched[nTouched++] = leaf;
                }
            }
        }
    }
}
