package etl.jvm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import org.junit.jupiter.api.Test;

/** NeedleTable: needles filed under keys, found through the bitset and the open-addressed table. */
class NeedleTableTest {
    /** A needle as a program's N line gives it: id, field 0, kind (e b x c), its predicates, hex text, c/s, anchor. */
    private static RuleProgram.Needle needle(int id, char kind, String text, boolean caseless, int... leaves) {
        StringBuilder hex = new StringBuilder();
        for (byte x : text.getBytes(StandardCharsets.UTF_8)) hex.append(String.format("%02x", x));
        String[] ls = new String[leaves.length];
        for (int i = 0; i < leaves.length; i++) ls[i] = String.valueOf(leaves[i]);
        return new RuleProgram.Needle(id, new String[] {
            "N", "0", String.valueOf(kind), String.join(",", ls), hex.toString(), caseless ? "c" : "s", "0"});
    }

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void anEmptyBuilderBuildsNoTable() {
        assertNull(new NeedleTable.Builder().build());
    }

    @Test
    void everyFiledKeyIsFoundWithItsCandidatesInOrder() {
        NeedleTable.Builder bld = new NeedleTable.Builder();
        int n = 1000;
        for (int i = 0; i < n; i++) {
            bld.add(i * 7919L + 3, needle(2 * i, 'c', "n" + i, false, i));
            bld.add(i * 7919L + 3, needle(2 * i + 1, 'e', "N" + i, true, i, n + i));
        }
        NeedleTable t = bld.build();
        for (int i = 0; i < n; i++) {
            int s = t.find(i * 7919L + 3);
            assertTrue(s >= 0, "key " + i);
            int from = t.from(s), to = t.to(s);
            assertEquals(2 * NeedleTable.STRIDE, to - from);
            assertEquals(2 * i, t.cand[from + NeedleTable.ID]);
            assertEquals(2 * i + 1, t.cand[from + NeedleTable.STRIDE + NeedleTable.ID]);
            int c = from + NeedleTable.STRIDE;
            assertArrayEquals(new int[] {i, n + i},
                Arrays.copyOfRange(t.leaves, t.cand[c + NeedleTable.LEAVES], t.cand[c + NeedleTable.LEAVES_END]));
            assertEquals(-1, t.extra(s));
        }
        int absent = 0;
        for (long k = 1; k < 100_000; k += 7919) if (t.find(k) < 0) absent++;
        assertEquals(13, absent);  // keys 1, 7920, ... are never filed (filed ones are 3 mod 7919)
    }

    @Test
    void candidatesCompareCasedAndCaselessBytes() {
        NeedleTable.Builder bld = new NeedleTable.Builder();
        bld.add(1L, needle(0, 'e', "cmd.exe", true, 0));
        bld.add(1L, needle(1, 'b', "Power", false, 1));
        bld.add(1L, needle(2, 'x', ".EXE", true, 2));
        bld.add(1L, needle(3, 'c', "-enc", true, 3));
        NeedleTable t = bld.build();
        int s = t.find(1L);
        int eq = t.from(s), starts = eq + NeedleTable.STRIDE, ends = starts + NeedleTable.STRIDE;
        int contains = ends + NeedleTable.STRIDE;
        byte[] v = b("CMD.EXE");
        assertTrue(t.affix(eq, v, v.length));
        assertTrue(t.affix(ends, v, v.length));
        assertFalse(t.affix(starts, v, v.length));
        byte[] w = b("cmd.exe ");
        assertFalse(t.affix(eq, w, w.length));  // equals: the whole value
        byte[] p = b("PowerShell -ENC x");
        assertTrue(t.affix(starts, p, p.length));
        byte[] q = b("powershell");
        assertFalse(t.affix(starts, q, q.length));  // cased: P is not p
        assertTrue(t.at(contains, p, p.length, 11));
        assertFalse(t.at(contains, p, p.length, 10));
        assertFalse(t.at(contains, p, p.length, p.length - 2));  // past the value's end
    }

    @Test
    void extrasAreFiledWithoutNeedles() {
        NeedleTable.Builder bld = new NeedleTable.Builder();
        bld.add(5L, needle(0, 'c', "abc", false, 0));
        bld.extra.put(9L, 42);
        bld.extra.put(5L, 7);
        NeedleTable t = bld.build();
        assertEquals(7, t.extra(t.find(5L)));
        int s = t.find(9L);
        assertEquals(42, t.extra(s));
        assertEquals(t.from(s), t.to(s));  // no candidates
    }
}
