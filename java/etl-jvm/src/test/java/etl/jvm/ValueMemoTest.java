package etl.jvm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.Test;

/** ValueMemo: a value seen again gives the predicates filed for it; a memo that seldom hits pauses. */
class ValueMemoTest {
    private static UTF8String u(String s) {
        return UTF8String.fromString(s);
    }

    @Test
    void aValueSeenAgainGivesItsPredicates() {
        ValueMemo m = new ValueMemo();
        assertNull(m.get(u("C:\\Windows\\cmd.exe")));
        m.put(u("C:\\Windows\\cmd.exe"), new int[] {9, 3, 5, 8}, 1, 3);
        assertArrayEquals(new int[] {3, 5}, m.get(u("C:\\Windows\\cmd.exe")));
        assertNull(m.get(u("C:\\Windows\\cmd.exE")));  // another value (one byte differs)
        m.put(u("C:\\Windows\\cmd.exE"), new int[0], 0, 0);
        assertArrayEquals(new int[0], m.get(u("C:\\Windows\\cmd.exE")));
        assertArrayEquals(new int[] {3, 5}, m.get(u("C:\\Windows\\cmd.exe")));
    }

    @Test
    void lazyPredicatesAreDecidedOncePerValue() {
        ValueMemo m = new ValueMemo();
        m.get(u("x"));
        m.put(u("x"), new int[] {1}, 0, 1);
        m.get(u("x"));
        int s = m.last;
        assertEquals(-1, m.decided(s, 4));
        for (int l = 0; l < 10; l++) m.decide(s, l, l % 3 == 0);  // grows past its first 3 places
        for (int l = 0; l < 10; l++) assertEquals(l % 3 == 0 ? 1 : 0, m.decided(s, l));
        assertEquals(-1, m.decided(s, 10));
    }

    @Test
    void manyDistinctValuesAreAllKeptAsTheMemoGrows() {
        ValueMemo m = new ValueMemo();
        for (int i = 0; i < 300; i++) {
            assertNull(m.get(u("v" + i)));
            m.put(u("v" + i), new int[] {i}, 0, 1);
        }
        int hits = 0;
        for (int i = 0; i < 300; i++) {
            int[] got = m.get(u("v" + i));
            if (got != null) {
                assertArrayEquals(new int[] {i}, got);  // a hit is always the value's own predicates
                hits++;
            }
        }
        assertEquals(true, hits > 150, "hits " + hits);
    }

    @Test
    void aMemoThatSeldomHitsPausesThenTriesAgain() {
        ValueMemo m = new ValueMemo();
        int n = 0;
        for (; n < ValueMemo.WINDOW - 1; n++) {  // every value new: no hit in a whole window
            m.get(u("id-" + n));
            m.put(u("id-" + n), new int[] {1}, 0, 1);
        }
        m.get(u("id-0"));  // the window's last lookup: fewer than 1 in WORTH hit, the memo pauses
        m.put(u("again"), new int[] {2}, 0, 1);  // paused: no-op
        for (int i = 0; i < ValueMemo.PAUSE - 1; i++) assertNull(m.get(u("again")));
        assertNull(m.get(u("again")));  // the pause's last value: the memo starts again, empty
        assertNull(m.get(u("again")));  // a miss, filed
        m.put(u("again"), new int[] {2}, 0, 1);
        assertArrayEquals(new int[] {2}, m.get(u("again")));
    }
}
