package etl.jvm;

/**
 * A value java.util.regex reads with a budget: every character read counts, and a search that reads more than
 * {@link #BASE} + {@link #PER_CHAR} x length characters stops with {@link Exhausted}.
 *
 * <p>java.util.regex backtracks: {@code x\w*\w*\w*\w*\w*y} on 300 word characters takes minutes, and a line
 * anyone can write reaches it. Linear searches read a few characters per character; the budget leaves them
 * 100 per character. Callers catch {@link Exhausted} and answer without the regex (RuleMatch: the rule set moves
 * to Hyperscan; Grok: the line goes to dead letters).
 */
final class CountedText implements CharSequence {
    /** Character reads one search may take on a value of n characters: BASE + PER_CHAR * n. */
    static final long BASE = 100_000;
    static final long PER_CHAR = 100;

    /** The budget ran out (no stack trace: it is an answer, not a bug). */
    static final class Exhausted extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Exhausted(String message) {
            super(message, null, false, false);
        }
    }

    private static final Exhausted EXHAUSTED = new Exhausted("etl: a regex search ran out of its step budget");

    private char[] chars = new char[256];
    private int length;
    private long left;

    /** The value: n ASCII bytes. */
    CountedText set(byte[] b, int n) {
        if (n > chars.length) chars = new char[Math.max(n, 2 * chars.length)];
        final char[] c = chars;
        for (int i = 0; i < n; i++) c[i] = (char) b[i];
        length = n;
        return this;
    }

    /** The value: any text. */
    CountedText set(String s) {
        int n = s.length();
        if (n > chars.length) chars = new char[Math.max(n, 2 * chars.length)];
        s.getChars(0, n, chars, 0);
        length = n;
        return this;
    }

    /** Before a search: its whole budget. */
    CountedText budget() {
        left = BASE + PER_CHAR * length;
        return this;
    }

    /** The budget of a search of this value. */
    long limit() {
        return BASE + PER_CHAR * length;
    }

    @Override
    public char charAt(int i) {
        if (--left < 0) throw EXHAUSTED;
        return chars[i];
    }

    @Override
    public int length() {
        return length;
    }

    @Override
    public CharSequence subSequence(int start, int end) {
        return new String(chars, start, end - start);
    }

    @Override
    public String toString() {
        return new String(chars, 0, length);
    }
}
