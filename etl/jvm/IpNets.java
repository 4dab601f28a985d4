package etl.jvm;

/**
 * cidr predicates of the JVM rule path: a text parsed exactly as Python's {@code ipaddress.ip_address} parses it
 * (IPv4: four ASCII decimal octets without leading zeros; IPv6: hextets of up to 4 hex digits, one "::", an IPv4
 * tail, a "%scope" suffix) and tested against networks (an address is never in a network of the other version).
 */
final class IpNets {
    private final int[] version;  // per network: 4 or 6
    private final long[] hi, lo;  // its address (IPv4 in lo)
    private final int[] prefix;
    final int[] leaves;

    /** From "4:<8 hex>:<prefix>;6:<32 hex>:<prefix>;..." and the predicates it decides. */
    IpNets(String nets, int[] leaves) {
        String[] parts = nets.split(";");
        version = new int[parts.length];
        hi = new long[parts.length];
        lo = new long[parts.length];
        prefix = new int[parts.length];
        for (int i = 0; i < parts.length; i++) {
            String[] f = parts[i].split(":");
            version[i] = Integer.parseInt(f[0]);
            String h = f[1];
            if (h.length() > 16) {
                hi[i] = Long.parseUnsignedLong(h.substring(0, h.length() - 16), 16);
                lo[i] = Long.parseUnsignedLong(h.substring(h.length() - 16), 16);
            } else {
                lo[i] = Long.parseUnsignedLong(h, 16);
            }
            prefix[i] = Integer.parseInt(f[2]);
        }
        this.leaves = leaves;
    }

    /** Is the text an address in one of the networks? */
    boolean holds(String s) {
        long[] a = new long[2];
        int v = s.indexOf(':') >= 0 ? (v6(s, a) ? 6 : 0) : (v4(s, a) ? 4 : 0);
        if (v == 0) return false;
        for (int i = 0; i < version.length; i++) {
            if (version[i] != v) continue;
            int p = prefix[i];
            if (v == 4) {
                long mask = p == 0 ? 0 : (0xFFFFFFFFL << (32 - p)) & 0xFFFFFFFFL;
                if ((a[1] & mask) == (lo[i] & mask)) return true;
            } else {
                long mh = p == 0 ? 0 : p >= 64 ? -1L : -1L << (64 - p);
                long ml = p <= 64 ? 0 : p == 128 ? -1L : -1L << (128 - p);
                if ((a[0] & mh) == (hi[i] & mh) && (a[1] & ml) == (lo[i] & ml)) return true;
            }
        }
        return false;
    }

    private static boolean v4(String s, long[] out) {
        String[] oct = s.split("\\.", -1);
        if (oct.length != 4) return false;
        long ip = 0;
        for (String o : oct) {
            int n = o.length();
            if (n == 0 || n > 3 || (n > 1 && o.charAt(0) == '0')) return false;
            int x = 0;
            for (int j = 0; j < n; j++) {
                char c = o.charAt(j);
                if (c < '0' || c > '9') return false;
                x = 10 * x + (c - '0');
            }
            if (x > 255) return false;
            ip = (ip << 8) | x;
        }
        out[1] = ip;
        return true;
    }

    private static boolean v6(String s, long[] out) {
        int pct = s.indexOf('%');
        if (pct >= 0) {
            String scope = s.substring(pct + 1);
            if (scope.isEmpty() || scope.indexOf('%') >= 0) return false;
            s = s.substring(0, pct);
        }
        if (s.isEmpty()) return false;
        java.util.List<String> parts = new java.util.ArrayList<>(java.util.Arrays.asList(s.split(":", -1)));
        if (parts.size() < 3) return false;
        if (parts.get(parts.size() - 1).indexOf('.') >= 0) {
            long[] t = new long[2];
            if (!v4(parts.remove(parts.size() - 1), t)) return false;
            parts.add(Long.toHexString(t[1] >>> 16));
            parts.add(Long.toHexString(t[1] & 0xFFFF));
        }
        int n = parts.size();
        if (n > 9) return false;
        int skip = -1;
        for (int i = 1; i < n - 1; i++) {
            if (parts.get(i).isEmpty()) {
                if (skip >= 0) return false;
                skip = i;
            }
        }
        int hiParts, loParts;
        if (skip >= 0) {
            hiParts = skip;
            loParts = n - skip - 1;
            if (parts.get(0).isEmpty() && --hiParts != 0) return false;
            if (parts.get(n - 1).isEmpty() && --loParts != 0) return false;
            if (8 - (hiParts + loParts) < 1) return false;
        } else {
            if (n != 8) return false;
            hiParts = n;
            loParts = 0;
        }
        long[] words = new long[8];
        int w = 0;
        for (int i = 0; i < hiParts; i++) {
            if ((words[w++] = hextet(parts.get(i))) < 0) return false;
        }
        w = 8 - loParts;
        for (int i = n - loParts; i < n; i++) {
            if ((words[w++] = hextet(parts.get(i))) < 0) return false;
        }
        out[0] = (words[0] << 48) | (words[1] << 32) | (words[2] << 16) | words[3];
        out[1] = (words[4] << 48) | (words[5] << 32) | (words[6] << 16) | words[7];
        return true;
    }

    private static long hextet(String h) {
        int n = h.length();
        if (n == 0 || n > 4) return -1;
        long x = 0;
        for (int j = 0; j < n; j++) {
            int d = Character.digit(h.charAt(j), 16);
            char c = h.charAt(j);
            if (d < 0 || c > 'f') return -1;
            x = 16 * x + d;
        }
        return x;
    }
}
