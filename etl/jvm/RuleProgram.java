package etl.jvm;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.spark.unsafe.types.UTF8String;

/**
 * The rule set of one program file (etl/optimize/jvmprogram.py, one field; etl/optimize/jvmmulti.py, several):
 * per field its patterns (java.util.regex, found through their literals' 3-grams), needles (equals, starts with,
 * ends with, contains: byte comparisons), null tests and text comparisons; per rule its boolean tree.
 */
final class RuleProgram {
    static final int LEAF = 0, TRUE = 1, FALSE = 2, NOT = 3, AND = 4, OR = 5;
    static final int EQ = 0, STARTS = 1, ENDS = 2, CONTAINS = 3;

    /** A string predicate decided by comparing bytes (ASCII letters lower-cased when caseless). */
    static final class Needle {
        final int id;
        final int field;
        final int kind;
        final byte[] text;  // lower-cased ASCII letters when caseless
        final boolean caseless;
        final int[] leaves;
        final int anchor;  // where in the needle its indexed 3 characters start; -1: not indexed

        Needle(int id, String[] f) {
            this.id = id;
            field = Integer.parseInt(f[1]);
            kind = "ebxc".indexOf(f[2]);
            caseless = f[5].equals("c");
            byte[] t = f[4].equals("-") ? new byte[0] : LiteralPrefilter.unhex(f[4]);
            if (caseless) for (int j = 0; j < t.length; j++) if (t[j] >= 'A' && t[j] <= 'Z') t[j] += 32;
            text = t;
            leaves = ints(f[3]);
            anchor = Integer.parseInt(f[6]);
        }

        /** Is the needle at position `pos` of the value's n bytes? */
        boolean at(byte[] b, int n, int pos) {
            int m = text.length;
            if (pos < 0 || pos + m > n) return false;
            if (caseless) {
                for (int j = 0; j < m; j++) {
                    byte x = b[pos + j];
                    if ((x >= 'A' && x <= 'Z' ? x + 32 : x) != text[j]) return false;
                }
            } else {
                for (int j = 0; j < m; j++) if (b[pos + j] != text[j]) return false;
            }
            return true;
        }

        /** Does the needle hold on the value, found without an index? */
        boolean holds(byte[] b, int n) {
            switch (kind) {
                case EQ: return n == text.length && at(b, n, 0);
                case STARTS: return at(b, n, 0);
                case ENDS: return at(b, n, n - text.length);
                default:
                    for (int i = 0; i + text.length <= n; i++) if (at(b, n, i)) return true;
                    return false;
            }
        }
    }

    /** gt, ge, lt, le against a text, in code point order (unsigned UTF-8 bytes). */
    static final class Compare {
        final String op;
        final int[] leaves;
        final byte[] bound;

        Compare(String[] f) {
            op = f[2];
            leaves = ints(f[3]);
            bound = f[4].equals("-") ? new byte[0] : LiteralPrefilter.unhex(f[4]);
        }

        boolean holds(byte[] b, int n) {
            int m = Math.min(n, bound.length), c = 0;
            for (int j = 0; j < m && c == 0; j++) c = Integer.compare(b[j] & 0xff, bound[j] & 0xff);
            if (c == 0) c = Integer.compare(n, bound.length);
            switch (op) {
                case "gt": return c > 0;
                case "ge": return c >= 0;
                case "lt": return c < 0;
                default: return c <= 0;
            }
        }
    }

    /** What one field's values are tested for. */
    static final class Field {
        static final int LONGEST = 8;  // equals/starts with needles are filed under their first min(length, 8) bytes
        static final int STRIDE = 16;  // the longest stride of a field's probes (file4)
        int stride;  // probe a value's 4-grams every `stride` positions (0: at every position)
        int[] unconditional = new int[0];  // patterns without a 3-character literal: run on every value its needs hold
        int[] nonAscii = new int[0];  // patterns that cannot match an ASCII value
        int[] caseless = new int[0];  // patterns run on every value holding a folding character
        /* Needle tables (null: none): contains needles of 3 bytes and pattern literals by their first 3 bytes
           (`key`; a slot's extra: an index into `literals`), longer contains needles by the 4 bytes at their anchor
           (`key4`), equals/starts with by their first and ends with by their last min(length, LONGEST) bytes
           (NeedleTable.affixKey; many needles end in ".exe": 3 bytes would leave them all to compare), contains
           needles of 1 or 2 bytes by those (2 bytes: 1 << 16 | the pair). */
        NeedleTable grams3, grams4, heads, tails, shorts;
        final long[] shortBits = new long[2 << 10];  // the keys of `shorts` (exact)
        int headLengths, tailLengths;  // bit m: some needle is filed under its first (last) m bytes
        byte[][][] literals = new byte[0][][];  // grams3's extra -> pattern literals starting with its 3 bytes
        int[][][] literalPatterns = new int[0][][];  // ... -> the patterns of each
        Needle[] loose = new Needle[0];  // needles checked on every value
        Needle[] caselessAll = new Needle[0];  // on a value holding a folding character: checked on its folded form
        int[] nullLeaves = new int[0], valueLeaves = new int[0];
        Compare[] compares = new Compare[0];
        IpNets[] nets = new IpNets[0];  // cidr predicates
    }

    /** A field equal to another field's value (fieldref). */
    static final class Ref {
        final int field, other;
        final int[] leaves;
        final boolean caseless;

        Ref(String[] f) {
            field = Integer.parseInt(f[1]);
            other = Integer.parseInt(f[2]);
            leaves = ints(f[3]);
            caseless = f[4].equals("c");
        }
    }

    final int leaves;
    Ref[] refs = new Ref[0];
    final Map<Integer, Integer> caselessClass = new HashMap<>();  // a character -> the least Python matches caselessly
    final String[] asciiText, unicodeText;  // compiled on first use
    private final Pattern[] ascii, unicode;
    final int[][] patternLeaves;
    final byte[][][][] rest;  // pattern -> its other needs -> their literals (lower case)
    final Field[] fields;
    final int needles;
    int[] folding = new int[0];  // the non-ASCII characters Python matches caselessly with an ASCII one
    final Map<Integer, Integer> foldTo = new HashMap<>();  // ... -> that ASCII letter (lower case)
    final UTF8String[] ids;
    final int[][] kinds;  // per rule, its tree in prefix order: node kinds
    final int[][] args;  // ... a leaf's predicate or a node's number of children
    final int[][] ends;  // ... the index after each node's subtree
    final int[] always;  // rules that can hold with every predicate false
    final int[][] leafRules;  // predicate -> the rules it triggers
    final int[][] leafBits;  // ... the trigger groups of each it is in (bits): it is evaluated when each holds
    /* The same, flat (what a row reads, next to each other in memory), by the first group (the likely rarest): a
       row looks at the rules one of whose first group's predicates holds, and then at their other groups */
    final int[] trig;  // per predicate, from trigFrom[l] to trigFrom[l + 1]: the rules whose first group holds it
    final int[] trigFrom;
    final int[] others;  // per rule, from othersFrom[r] to othersFrom[r + 1]: each other group's size, predicates
    final int[] othersFrom;
    final int[] tree;  // the rules' trees in prefix order: (kind, predicate or number of children, the offset after
                       // the node's subtree) triples; rule r's root at root[r]
    final int[] root;
    /* Lazy predicates: a needle or pattern none of whose predicates is a rule's trigger is not looked for in
       every value; a rule evaluated on a row (one of its triggers held) decides it when it reads it. */
    final boolean[] lazyLeaf;  // predicate -> decided on demand (by the lazy needles and patterns below)
    final int[][] lazyNeedles;  // predicate -> its lazy needles (ids)
    final int[][] lazyPatterns;  // predicate -> its lazy patterns
    final int[] lazyField;  // predicate -> the field its lazy needles and patterns read (-1: several)
    Needle[] needleList = new Needle[0];  // by id
    final int[] patternField;
    final boolean[] patternWide, patternCaseless;  // cannot match an ASCII value; has a caseless part
    private final boolean[] trigger;  // predicate -> some rule is evaluated when it holds

    RuleProgram(List<String> lines) {
        List<String[]> pats = new ArrayList<>(), rules = new ArrayList<>(), other = new ArrayList<>();
        Map<String, String> classes = new HashMap<>();
        int nLeaves = 0, nFields = 1;
        for (String line : lines) {
            if (line.isEmpty()) continue;
            String[] f = line.split(" ", -1);
            switch (f[0]) {
                case "L": nLeaves = Integer.parseInt(f[1]); break;
                case "D": nFields = Integer.parseInt(f[1]); break;
                case "F": folding = f[1].isEmpty() ? new int[0] : ints16(f[1]); break;
                case "S": classes.put(f[1], text(f[2])); break;
                case "H":
                    for (String kv : f[1].split(",")) {
                        String[] two = kv.split(":");
                        caselessClass.put(Integer.parseInt(two[0], 16), Integer.parseInt(two[1], 16));
                    }
                    break;
                case "K":
                    refs = Arrays.copyOf(refs, refs.length + 1);
                    refs[refs.length - 1] = new Ref(f);
                    break;
                case "G":
                    for (String kv : f[1].split(",")) {
                        String[] two = kv.split(":");
                        foldTo.put(Integer.parseInt(two[0], 16), Integer.parseInt(two[1], 16));
                    }
                    break;
                case "P": pats.add(f); break;
                case "R": rules.add(f); break;
                default: other.add(f); break;
            }
        }
        leaves = nLeaves;
        ids = new UTF8String[rules.size()];
        kinds = new int[rules.size()][];
        args = new int[rules.size()][];
        ends = new int[rules.size()][];
        List<Integer> alw = new ArrayList<>();
        List<Map<Integer, Integer>> byLeaf = new ArrayList<>();  // predicate -> rule -> its trigger groups' bits
        for (int l = 0; l < leaves; l++) byLeaf.add(new LinkedHashMap<>());
        for (int r = 0; r < rules.size(); r++) {
            String[] f = rules.get(r);
            ids[r] = UTF8String.fromString(text(f[1]));
            if (f[2].equals("1")) alw.add(r);
            String[] toks = f[3].split(",");
            // trigger groups: when the rule holds, a predicate of each does (none: one group, every predicate)
            String[] groups = f.length > 4 ? f[4].split(";") : null;
            for (int g = 0; groups != null && g < groups.length; g++) {
                for (int l : ints(groups[g])) byLeaf.get(l).merge(r, 1 << g, (a, b) -> a | b);
            }
            kinds[r] = new int[toks.length];
            args[r] = new int[toks.length];
            for (int k = 0; k < toks.length; k++) {
                String t = toks[k];
                char c = t.charAt(0);
                kinds[r][k] = c == 'P' ? LEAF : c == 'T' ? TRUE : c == 'F' ? FALSE : c == 'N' ? NOT : c == 'A' ? AND : OR;
                if (t.length() > 1) args[r][k] = Integer.parseInt(t.substring(1));
                if (c == 'P' && groups == null) byLeaf.get(args[r][k]).put(r, 1);
            }
            ends[r] = new int[toks.length];
            end(r, 0);
        }
        always = alw.stream().mapToInt(Integer::intValue).toArray();
        leafRules = new int[leaves][];
        leafBits = new int[leaves][];
        for (int l = 0; l < leaves; l++) {
            leafRules[l] = byLeaf.get(l).keySet().stream().mapToInt(Integer::intValue).toArray();
            leafBits[l] = byLeaf.get(l).values().stream().mapToInt(Integer::intValue).toArray();
        }
        trigger = new boolean[leaves];
        for (int l = 0; l < leaves; l++) trigger[l] = leafRules[l].length > 0;
        trigFrom = new int[leaves + 1];
        List<Integer> firsts = new ArrayList<>();
        for (int l = 0; l < leaves; l++) {
            for (int j = 0; j < leafRules[l].length; j++) if ((leafBits[l][j] & 1) != 0) firsts.add(leafRules[l][j]);
            trigFrom[l + 1] = firsts.size();
        }
        trig = firsts.stream().mapToInt(Integer::intValue).toArray();
        List<List<List<Integer>>> groupsOf = new ArrayList<>();  // rule -> its groups after the first
        for (int r = 0; r < rules.size(); r++) groupsOf.add(new ArrayList<>());
        for (int l = 0; l < leaves; l++) {
            for (int j = 0; j < leafRules[l].length; j++) {
                List<List<Integer>> gs = groupsOf.get(leafRules[l][j]);
                for (int g = 1; g < 32; g++) {
                    if ((leafBits[l][j] & (1 << g)) == 0) continue;
                    while (gs.size() < g) gs.add(new ArrayList<>());
                    gs.get(g - 1).add(l);
                }
            }
        }
        othersFrom = new int[rules.size() + 1];
        List<Integer> pool = new ArrayList<>();
        for (int r = 0; r < rules.size(); r++) {
            for (List<Integer> g : groupsOf.get(r)) {
                pool.add(g.size());
                pool.addAll(g);
            }
            othersFrom[r + 1] = pool.size();
        }
        others = pool.stream().mapToInt(Integer::intValue).toArray();
        root = new int[rules.size()];
        int nodes = 0;
        for (int r = 0; r < rules.size(); r++) {
            root[r] = 3 * nodes;
            nodes += kinds[r].length;
        }
        tree = new int[3 * nodes];
        for (int r = 0; r < rules.size(); r++) {
            for (int k = 0, o = root[r]; k < kinds[r].length; k++, o += 3) {
                tree[o] = kinds[r][k];
                tree[o + 1] = args[r][k];
                tree[o + 2] = root[r] + 3 * ends[r][k];
            }
        }
        fields = new Field[nFields];
        List<List<Integer>> uncond = new ArrayList<>(), folds = new ArrayList<>(), wide = new ArrayList<>();
        List<Map<String, List<Integer>>> byLiteral = new ArrayList<>();
        for (int k = 0; k < nFields; k++) {
            fields[k] = new Field();
            uncond.add(new ArrayList<>());
            folds.add(new ArrayList<>());
            wide.add(new ArrayList<>());
            byLiteral.add(new HashMap<>());
        }
        int n = pats.size();
        ascii = new Pattern[n];
        unicode = new Pattern[n];
        asciiText = new String[n];
        unicodeText = new String[n];
        patternLeaves = new int[n][];
        rest = new byte[n][][][];
        patternField = new int[n];
        patternWide = new boolean[n];
        patternCaseless = new boolean[n];
        for (int i = 0; i < n; i++) {
            String[] f = pats.get(i);
            int field = f.length > 6 ? Integer.parseInt(f[6]) : 0;
            patternLeaves[i] = ints(f[1]);
            asciiText[i] = expand(text(f[2]), classes);
            unicodeText[i] = expand(text(f[3]), classes);
            rest[i] = new byte[0][][];
            patternField[i] = field;
            patternWide[i] = f[4].equals("u");
            patternCaseless[i] = f[5].equals("c");
            boolean lazy = lazy(patternLeaves[i]);
            if (!f[4].equals("-") && !f[4].equals("u")) {
                String[] needs = f[4].split(";");
                rest[i] = new byte[needs.length - 1][][];
                for (int k = 1; k < needs.length; k++) rest[i][k - 1] = LiteralPrefilter.need(needs[k]);
            }
            if (lazy) continue;
            if (f[4].equals("-")) {
                uncond.get(field).add(i);
            } else if (f[4].equals("u")) {
                wide.get(field).add(i);
            } else if (f[4].startsWith("*")) {  // needs of 1 or 2 characters: checked before the pattern runs
                uncond.get(field).add(i);
                if (f[5].equals("c")) folds.get(field).add(i);
            } else {
                if (f[5].equals("c")) folds.get(field).add(i);
                for (String h : f[4].split(";")[0].split(",")) {
                    byLiteral.get(field).computeIfAbsent(text(h), k -> new ArrayList<>()).add(i);
                }
            }
        }
        List<NeedleTable.Builder[]> tables = new ArrayList<>();  // per field: grams3, grams4, heads, tails, shorts
        for (int k = 0; k < nFields; k++) {
            Field fl = fields[k];
            fl.unconditional = uncond.get(k).stream().mapToInt(Integer::intValue).toArray();
            fl.caseless = folds.get(k).stream().mapToInt(Integer::intValue).toArray();
            fl.nonAscii = wide.get(k).stream().mapToInt(Integer::intValue).toArray();
            tables.add(new NeedleTable.Builder[] {new NeedleTable.Builder(), new NeedleTable.Builder(),
                new NeedleTable.Builder(), new NeedleTable.Builder(), new NeedleTable.Builder()});
            Map<Integer, List<byte[]>> lits = new LinkedHashMap<>();
            Map<Integer, List<int[]>> litPats = new HashMap<>();
            for (Map.Entry<String, List<Integer>> e : byLiteral.get(k).entrySet()) {
                byte[] lit = e.getKey().getBytes(StandardCharsets.US_ASCII);
                int g = key(lit, 0);
                lits.computeIfAbsent(g, x -> new ArrayList<>()).add(lit);
                litPats.computeIfAbsent(g, x -> new ArrayList<>()).add(e.getValue().stream().mapToInt(Integer::intValue).toArray());
            }
            fl.literals = new byte[lits.size()][][];
            fl.literalPatterns = new int[lits.size()][][];
            int j = 0;
            for (Map.Entry<Integer, List<byte[]>> e : lits.entrySet()) {
                fl.literals[j] = e.getValue().toArray(new byte[0][]);
                fl.literalPatterns[j] = litPats.get(e.getKey()).toArray(new int[0][]);
                tables.get(k)[0].extra.put((long) e.getKey(), j++);
            }
        }
        needles = indexOthers(other, tables);
        lazyLeaf = new boolean[leaves];
        lazyNeedles = new int[leaves][];
        lazyPatterns = new int[leaves][];
        lazyField = new int[leaves];
        lazySources(pats.size());
    }

    /** The N, U, I and C lines into their fields, the needles into the fields' tables; the number of needles. */
    private int indexOthers(List<String[]> other, List<NeedleTable.Builder[]> tables) {
        List<List<Needle>> loose = new ArrayList<>(), caseless = new ArrayList<>(), longer = new ArrayList<>();
        for (int k = 0; k < fields.length; k++) {
            loose.add(new ArrayList<>());
            caseless.add(new ArrayList<>());
            longer.add(new ArrayList<>());
        }
        int count = 0;
        for (String[] f : other) {
            int k = Integer.parseInt(f[1]);
            Field fl = fields[k];
            if (f[0].equals("U")) {
                if (f[2].equals("n")) fl.nullLeaves = concat(fl.nullLeaves, ints(f[3]));
                else fl.valueLeaves = concat(fl.valueLeaves, ints(f[3]));
            } else if (f[0].equals("I")) {
                fl.nets = Arrays.copyOf(fl.nets, fl.nets.length + 1);
                fl.nets[fl.nets.length - 1] = new IpNets(f[3], ints(f[2]));
            } else if (f[0].equals("C")) {
                fl.compares = Arrays.copyOf(fl.compares, fl.compares.length + 1);
                fl.compares[fl.compares.length - 1] = new Compare(f);
            } else if (f[0].equals("N")) {
                Needle nd = new Needle(count++, f);
                needleList = Arrays.copyOf(needleList, count);
                needleList[nd.id] = nd;
                if (lazyNeedle(nd)) continue;
                if (nd.caseless) caseless.get(k).add(nd);
                NeedleTable.Builder[] t = tables.get(k);
                int m = nd.text.length, a = Math.min(m, Field.LONGEST);
                if (nd.kind == STARTS || nd.kind == EQ) {
                    long h = 0;
                    for (int j = 0; j < a; j++) h = h * 257 + low(nd.text[j]);
                    t[2].add(NeedleTable.affixKey(h, a), nd);
                    fl.headLengths |= 1 << a;
                } else if (nd.kind == ENDS) {
                    long h = 0;
                    for (int j = m - 1; j >= m - a; j--) h = h * 257 + low(nd.text[j]);
                    t[3].add(NeedleTable.affixKey(h, a), nd);
                    fl.tailLengths |= 1 << a;
                } else if (m == 0) {
                    loose.get(k).add(nd);
                } else if (m < 3) {
                    int key = m == 1 ? low(nd.text[0]) : 1 << 16 | low(nd.text[0]) << 8 | low(nd.text[1]);
                    t[4].add(key, nd);
                    fl.shortBits[key >>> 6] |= 1L << key;
                } else if (m == 3) {
                    t[0].add(key(nd.text, 0), nd);
                } else {
                    longer.get(k).add(nd);
                }
            }
        }
        for (int k = 0; k < fields.length; k++) {
            Field fl = fields[k];
            file4(fl, tables.get(k), longer.get(k));
            fl.loose = loose.get(k).toArray(new Needle[0]);
            fl.caselessAll = caseless.get(k).toArray(new Needle[0]);
            NeedleTable.Builder[] t = tables.get(k);
            fl.grams3 = t[0].build();
            fl.grams4 = t[1].build();
            fl.heads = t[2].build();
            fl.tails = t[3].build();
            fl.shorts = t[4].build();
        }
        return count;
    }

    /** Files a field's contains needles of 4 bytes or more by 4 bytes. When all are long and nothing else is found
     *  per position (no 3-byte needles or literals, no short needles: a field of hashes), each is filed under the
     *  `stride` 4-grams of a window of its bytes (least shared with the field's other needles), and a value is
     *  probed every `stride` positions only: an occurrence has one window position at a multiple of the stride.
     *  Else each is filed under the 4 bytes at its anchor, and a value is probed at every position. */
    private static void file4(Field fl, NeedleTable.Builder[] t, List<Needle> nds) {
        int shortest = Integer.MAX_VALUE;
        for (Needle nd : nds) shortest = Math.min(shortest, nd.text.length);
        int stride = Math.min(Field.STRIDE, (shortest - 3) / 2);
        if (nds.isEmpty() || stride < 4 || !t[0].isEmpty() || !t[4].isEmpty()) {
            for (Needle nd : nds) t[1].add(key4(nd.text, nd.anchor) & 0xffffffffL, nd);
            return;
        }
        Map<Integer, Integer> uses = new HashMap<>();
        for (Needle nd : nds) for (int a = 0; a + 4 <= nd.text.length; a++) uses.merge(key4(nd.text, a), 1, Integer::sum);
        for (Needle nd : nds) {
            int best = 0;
            long least = Long.MAX_VALUE;
            for (int o = 0; o + stride + 3 <= nd.text.length; o++) {
                long sum = 0;
                for (int a = o; a < o + stride; a++) sum += uses.get(key4(nd.text, a));
                if (sum < least) {
                    least = sum;
                    best = o;
                }
            }
            for (int a = best; a < best + stride; a++) t[1].add(key4(nd.text, a) & 0xffffffffL, nd, a);
        }
        fl.stride = stride;
    }

    /** Are none of the predicates a trigger? (their needle or pattern is then decided on demand) */
    private boolean lazy(int[] ls) {
        for (int l : ls) if (trigger[l]) return false;
        return ls.length > 0;
    }

    /** A needle decided on demand: not a trigger, and cheap to decide alone (not a contains needle: one scan of
     *  the value finds them all, deciding them one by one costs a scan each). */
    private boolean lazyNeedle(Needle nd) {
        return nd.kind != CONTAINS && lazy(nd.leaves);
    }

    /** Each predicate's lazy needles and patterns. */
    private void lazySources(int nPatterns) {
        List<List<Integer>> nds = new ArrayList<>(), ps = new ArrayList<>();
        for (int l = 0; l < leaves; l++) {
            nds.add(new ArrayList<>());
            ps.add(new ArrayList<>());
        }
        for (Needle nd : needleList) if (lazyNeedle(nd)) for (int l : nd.leaves) nds.get(l).add(nd.id);
        for (int i = 0; i < nPatterns; i++) if (lazy(patternLeaves[i])) for (int l : patternLeaves[i]) ps.get(l).add(i);
        for (int l = 0; l < leaves; l++) {
            lazyNeedles[l] = nds.get(l).stream().mapToInt(Integer::intValue).toArray();
            lazyPatterns[l] = ps.get(l).stream().mapToInt(Integer::intValue).toArray();
            lazyLeaf[l] = lazyNeedles[l].length + lazyPatterns[l].length > 0;
            int k = -1;
            for (int id : lazyNeedles[l]) k = k == -1 || k == needleList[id].field ? needleList[id].field : -2;
            for (int pat : lazyPatterns[l]) k = k == -1 || k == patternField[pat] ? patternField[pat] : -2;
            lazyField[l] = Math.max(k, -1);
        }
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

    int patterns() {
        return ascii.length;
    }

    synchronized Pattern pattern(int i, boolean asciiValue) {
        Pattern[] cache = asciiValue ? ascii : unicode;
        Pattern p = cache[i];
        if (p == null) cache[i] = p = Pattern.compile(asciiValue ? asciiText[i] : unicodeText[i]);
        return p;
    }

    /** The 3 bytes at i, ASCII letters lower-cased, as one number (what literals and needles are found by). */
    static int key(byte[] b, int i) {
        return (low(b[i]) << 16) | (low(b[i + 1]) << 8) | low(b[i + 2]);
    }

    static int key4(byte[] b, int i) {
        return (key(b, i) << 8) | low(b[i + 3]);
    }

    private static final byte[] LOW = new byte[256];

    static {
        for (int v = 0; v < 256; v++) LOW[v] = (byte) (v >= 'A' && v <= 'Z' ? v + 32 : v);
    }

    /** The byte, an ASCII letter lower-cased, as an unsigned number. */
    static int low(byte x) {
        return LOW[x & 0xff] & 0xff;
    }

    /** Are the two texts equal, caselessly as Python's re compares characters (ASCII: lower-cased bytes)? */
    boolean sameCaseless(UTF8String a, UTF8String b) {
        if (a.isFullAscii() && b.isFullAscii()) {
            int n = a.numBytes();
            if (n != b.numBytes()) return false;
            byte[] x = a.getBytes(), y = b.getBytes();
            for (int i = 0; i < n; i++) if (low(x[i]) != low(y[i])) return false;
            return true;
        }
        int[] x = a.toString().codePoints().toArray(), y = b.toString().codePoints().toArray();
        if (x.length != y.length) return false;
        for (int i = 0; i < x.length; i++) {
            if (x[i] != y[i] && !caselessClass.getOrDefault(x[i], x[i]).equals(caselessClass.getOrDefault(y[i], y[i]))) return false;
        }
        return true;
    }

    /** The value's text with each folding character replaced by its ASCII letter, as UTF-8. */
    byte[] folded(String s) {
        StringBuilder out = new StringBuilder(s.length());
        s.codePoints().forEach(c -> out.appendCodePoint(foldTo.getOrDefault(c, c)));
        return out.toString().getBytes(StandardCharsets.UTF_8);
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

    private static int[] concat(int[] a, int[] b) {
        int[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    static int[] ints(String s) {
        if (s.isEmpty()) return new int[0];
        return Arrays.stream(s.split(",")).mapToInt(Integer::parseInt).toArray();
    }

    private static int[] ints16(String s) {
        return Arrays.stream(s.split(",")).mapToInt(h -> Integer.parseInt(h, 16)).toArray();
    }

    private static String text(String hex) {
        return new String(LiteralPrefilter.unhex(hex), StandardCharsets.UTF_8);
    }
}
