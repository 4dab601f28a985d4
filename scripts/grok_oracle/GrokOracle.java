import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;
import org.elasticsearch.grok.*;
import org.joni.*;

/** Logstash's grok filter on one event, over the joni regex Elasticsearch's grok library compiles. */
public class GrokOracle {
    static String unhex(String s) {
        byte[] b = new byte[s.length() / 2];
        for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        return new String(b, StandardCharsets.UTF_8);
    }

    public static void main(String[] args) throws Exception {
        folder = args[0];
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
        String row;
        while ((row = in.readLine()) != null) {
            String[] f = row.split("\t", -1);
            try {
                out.println(run(f[0], unhex(f[1]), unhex(f[2])));
                out.flush();
            } catch (Throwable e) {
                Throwable c = e.getCause() != null ? e.getCause() : e;
                out.println("ERROR " + f[0] + " " + unhex(f[1]) + ": " + c.toString().replace('\n', ' '));
            }
        }
    }

    static final java.util.concurrent.ScheduledExecutorService TIMER =
        java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> { Thread t = new Thread(r); t.setDaemon(true); return t; });

    /** The match's start, -1 for none, or null when it took longer than a second (a runaway backtrack). */
    static Integer search(Matcher m, int end) {
        java.util.concurrent.ScheduledFuture<?> f = TIMER.schedule(m::interrupt, 1, java.util.concurrent.TimeUnit.SECONDS);
        int r = m.search(0, end, Option.DEFAULT);
        f.cancel(false);
        return r == Matcher.INTERRUPTED ? null : r;
    }

    static final Map<Grok, Regex> RUBY = new HashMap<>();

    /** The expansion compiled as Logstash's grok (jls-grok) does: Regexp.new(expanded, Regexp::MULTILINE),
     *  the dot matching a newline; Elasticsearch compiles it without. */
    static Regex ruby(Grok g) {
        return RUBY.get(g);
    }

    static final Map<String, Grok> CACHE = new HashMap<>();
    static final Map<String, PatternBank> BANKS = new HashMap<>();
    static String folder;  // etl/grok_patterns: the jar's files with Logstash's field references restored

    static PatternBank bank(String lib) throws IOException {
        PatternBank b = BANKS.get(lib);
        if (b == null) {
            Map<String, String> defs = new LinkedHashMap<>();
            File[] files = new File(folder, lib).listFiles();
            Arrays.sort(files);
            for (File f : files) {
                for (String line : java.nio.file.Files.readAllLines(f.toPath(), StandardCharsets.UTF_8)) {
                    if (line.isBlank() || line.startsWith("#")) continue;
                    String[] kv = line.split("\\s+", 2);
                    defs.put(kv[0], kv.length > 1 ? kv[1] : "");
                }
            }
            b = new PatternBank(defs);
            BANKS.put(lib, b);
        }
        return b;
    }

    static Grok grok(String lib, String pattern) throws Exception {
        String key = lib + "\t" + pattern;
        Grok g = CACHE.get(key);
        if (g == null) {
            boolean all = lib.startsWith("all:");  // every %{NAME} a group: the values of the components
            PatternBank bank = bank(lib.endsWith("ecs-v1") ? "ecs-v1" : "legacy");
            java.lang.reflect.Constructor<Grok> c = Grok.class.getDeclaredConstructor(
                PatternBank.class, String.class, boolean.class, java.util.function.Consumer.class);
            c.setAccessible(true);
            g = c.newInstance(bank, pattern, !all, (java.util.function.Consumer<String>) m -> {});
            java.lang.reflect.Method toRegex = Grok.class.getDeclaredMethod("toRegex", PatternBank.class, String.class);
            toRegex.setAccessible(true);
            byte[] src = ((String) toRegex.invoke(g, bank, pattern)).getBytes(StandardCharsets.UTF_8);
            RUBY.put(g, new Regex(src, 0, src.length, Option.MULTILINE, org.jcodings.specific.UTF8Encoding.INSTANCE));
            CACHE.put(key, g);
        }
        return g;
    }

    static String run(String lib, String pattern, String text) throws Exception {
        Grok grok = grok(lib, pattern);
        if (lib.startsWith("all:")) return allGroups(ruby(grok), text);
        Regex re = ruby(grok);
        byte[] b = text.getBytes(StandardCharsets.UTF_8);
        Matcher m = re.matcher(b);
        Integer r = search(m, b.length);
        if (r == null) return "TIMEOUT";
        if (r < 0) return "NOMATCH";
        Region reg = m.getEagerRegion();
        TreeMap<Integer, String> byGroup = new TreeMap<>();
        for (Iterator<NameEntry> it = re.namedBackrefIterator(); it.hasNext();) {
            NameEntry e = it.next();
            String name = new String(e.name, e.nameP, e.nameEnd - e.nameP, StandardCharsets.UTF_8);
            for (int g : e.getBackRefs()) byGroup.put(g, name);
        }
        Map<String, Object> event = new LinkedHashMap<>();
        for (Map.Entry<Integer, String> e : byGroup.entrySet()) {
            int g = e.getKey();
            if (reg.beg[g] < 0) continue;
            String value = new String(b, reg.beg[g], reg.end[g] - reg.beg[g], StandardCharsets.UTF_8);
            if (value.isEmpty()) continue;  // keep_empty_captures => false
            String name = e.getValue();
            String type = null;
            String[] parts = name.split(":", -1);  // PATTERN:field[:type], or a raw (?<field>...) group
            if (parts.length > 1) { name = parts[1]; type = parts.length > 2 ? parts[2] : null; }
            if (name.startsWith("@metadata")) continue;  // [@metadata][...]: not part of the event's output
            Object v = value;
            if ("int".equals(type) || "long".equals(type)) v = rubyToI(value);  // Elasticsearch's copy: :long for :int
            else if ("float".equals(type)) v = rubyToF(value);
            handle(event, name, v);
        }
        return "MATCH " + json(event) + " " + json(names(re));
    }

    static String allGroups(Regex re, String text) {
        byte[] b = text.getBytes(StandardCharsets.UTF_8);
        Matcher m = re.matcher(b);
        Integer r = search(m, b.length);
        if (r == null) return "TIMEOUT";
        if (r < 0) return "NOMATCH";
        Region reg = m.getEagerRegion();
        List<Object> out = new ArrayList<>();
        for (Iterator<NameEntry> it = re.namedBackrefIterator(); it.hasNext();) {
            NameEntry e = it.next();
            String name = new String(e.name, e.nameP, e.nameEnd - e.nameP, StandardCharsets.UTF_8);
            for (int g : e.getBackRefs()) {
                if (reg.beg[g] < 0) continue;
                out.add(Arrays.asList(name.split(":")[0], new String(b, reg.beg[g], reg.end[g] - reg.beg[g], StandardCharsets.UTF_8)));
            }
        }
        return "MATCH " + json(out);
    }

    static List<Object> names(Regex re) {
        List<Object> out = new ArrayList<>();
        for (Iterator<NameEntry> it = re.namedBackrefIterator(); it.hasNext();) {
            NameEntry e = it.next();
            out.add(new String(e.name, e.nameP, e.nameEnd - e.nameP, StandardCharsets.UTF_8));
        }
        return out;
    }

    static List<String> path(String name) {
        List<String> p = new ArrayList<>();
        if (name.startsWith("[")) {
            for (String part : name.substring(1, name.length() - 1).split("\\]\\[")) p.add(part);
        } else {
            p.addAll(Arrays.asList(name.split("\\.")));  // Elasticsearch's copy spells Logstash's [a][b] as a.b
        }
        return p;
    }

    @SuppressWarnings("unchecked")
    static void handle(Map<String, Object> event, String name, Object value) {
        List<String> p = path(name);
        Map<String, Object> at = event;
        for (int i = 0; i < p.size() - 1; i++) {
            Object next = at.get(p.get(i));
            if (!(next instanceof Map)) { next = new LinkedHashMap<String, Object>(); at.put(p.get(i), next); }
            at = (Map<String, Object>) next;
        }
        String leaf = p.get(p.size() - 1);
        Object old = at.get(leaf);
        if (old == null) at.put(leaf, value);
        else if (old instanceof List) ((List<Object>) old).add(value);
        else if (old instanceof String) { List<Object> l = new ArrayList<>(); l.add(old); l.add(value); at.put(leaf, l); }
        // a converted (int/float) value captured again: Logstash's handle() keeps the first
    }

    static Object rubyToI(String s) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("^\\s*([+-]?\\d+(?:_\\d+)*)").matcher(s);
        if (!m.find()) return 0L;
        return new java.math.BigInteger(m.group(1).replace("_", "").replace("+", ""));
    }

    static Object rubyToF(String s) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("^\\s*([+-]?(?:\\d+(?:_\\d+)*(?:\\.\\d+(?:_\\d+)*)?|\\.\\d+(?:_\\d+)*)(?:[eE][+-]?\\d+)?)").matcher(s);
        if (!m.find()) return 0.0;
        return Double.parseDouble(m.group(1).replace("_", ""));
    }

    static String json(Object o) {
        if (o == null) return "null";
        if (o instanceof String) {
            StringBuilder sb = new StringBuilder("\"");
            for (char c : ((String) o).toCharArray()) {
                if (c == '"' || c == '\\') sb.append('\\').append(c);
                else if (c < 0x20 || c > 0x7e) sb.append(String.format("\\u%04x", (int) c));
                else sb.append(c);
            }
            return sb.append('"').toString();
        }
        if (o instanceof Map) {
            StringBuilder sb = new StringBuilder("{");
            for (Map.Entry<?, ?> e : ((Map<?, ?>) o).entrySet()) {
                if (sb.length() > 1) sb.append(',');
                sb.append(json(e.getKey())).append(':').append(json(e.getValue()));
            }
            return sb.append('}').toString();
        }
        if (o instanceof List) {
            StringBuilder sb = new StringBuilder("[");
            for (Object x : (List<?>) o) { if (sb.length() > 1) sb.append(','); sb.append(json(x)); }
            return sb.append(']').toString();
        }
        return o.toString();
    }
}
